-- Blocks of allocator snapshots: each block's life, its stack as text and its
-- allocation site.

-- _allocator_blocks_window(tid, lo, hi): the lives of the blocks allocated by entries lo..hi
-- of timeline tid, each with its free_completed and first free_requested (frees name
-- their alloc in alloc_index). The store fills the cache range by range, so that the
-- joins' tables stay within the ingest's memory.
CREATE OR REPLACE MACRO _allocator_blocks_window(tid, lo, hi) AS TABLE
WITH a AS (SELECT * FROM allocator_events
           WHERE timeline_id = tid AND action = 'alloc' AND event_index BETWEEN lo AND hi),
     fc AS (SELECT * FROM allocator_events
            WHERE timeline_id = tid AND action = 'free_completed' AND alloc_index BETWEEN lo AND hi),
     fr AS (SELECT alloc_index, min(event_index) AS idx FROM allocator_events
            WHERE timeline_id = tid AND action = 'free_requested' AND alloc_index BETWEEN lo AND hi
            GROUP BY alloc_index)
SELECT a.timeline_id, a.source_id, a.address, a.block_bytes AS size, a.size AS requested_size,
       a.stream, a.event_index AS alloc_index, fr.idx AS free_requested_index,
       f.event_index AS free_index, a.time_us AS alloc_time_us, f.time_us AS free_time_us,
       a.stack_id, 'alloc' AS stack_from, 'window' AS origin
FROM a LEFT JOIN fc f ON f.alloc_index = a.event_index
LEFT JOIN fr ON fr.alloc_index = a.event_index;

-- _allocator_blocks_before: the blocks made before the window: freed in it (frames of the
-- free), or alive through it (frames of the end state).
CREATE OR REPLACE VIEW _allocator_blocks_before AS
SELECT f.timeline_id, f.source_id, f.address, f.block_bytes AS size, f.size AS requested_size,
       f.stream, NULL AS alloc_index, NULL AS free_requested_index, f.event_index AS free_index,
       NULL AS alloc_time_us, f.time_us AS free_time_us, f.stack_id, 'free' AS stack_from,
       'before_window' AS origin
FROM allocator_events f WHERE f.action = 'free_completed' AND f.alloc_index IS NULL
UNION ALL
SELECT b.timeline_id, b.source_id, b.address, b.size, b.requested_size, b.stream, NULL,
       NULL, NULL, NULL, NULL, b.stack_id, 'end_state', 'before_window'
FROM allocator_blocks_end b
WHERE b.state <> 'inactive' AND b.alloc_index IS NULL;

-- _allocator_blocks_derived: every block's life (cached in _cache_allocator_blocks).
CREATE OR REPLACE VIEW _allocator_blocks_derived AS
SELECT w.* FROM timeline_records t,
     LATERAL _allocator_blocks_window(t.timeline_id, 0, 9223372036854775807) w
WHERE t.format = 'cuda_snapshot'
UNION ALL
SELECT * FROM _allocator_blocks_before;

-- allocator_blocks: one row per block the window saw alive.
--   size: the whole block; requested_size: what was asked for; alloc_index /
--   free_index: event_index of its alloc / free_completed (NULL: before the window /
--   still allocated at the end); free_requested_index; origin: window | before_window;
--   stack_from: whose frames stack_id holds: 'alloc'; 'free' for a block made before
--   the window (torch gives a free the allocation's frames unless context='all');
--   'end_state' (the end state's frames of the block, empty when it was made before
--   recording began).
CREATE OR REPLACE VIEW allocator_blocks AS
SELECT * FROM _cache_allocator_blocks;

-- _is_internal_frame: frames that are not the allocation's site: C/C++ frames and
-- anything not a .py file, Python's own library, <frozen ...>/<string>, and the
-- packages torch, triton, jax and jaxlib (a JAX memory profile's stacks begin inside jax).
CREATE OR REPLACE MACRO _is_internal_frame(fn) AS
    fn IS NULL OR NOT ends_with(fn, '.py') OR starts_with(fn, '<')
    OR regexp_matches(fn, '(^|/)(torch|triton|jax|jaxlib)/')
    OR (regexp_matches(fn, '/lib/python3\.[0-9]+/') AND NOT regexp_matches(fn, '/(site|dist)-packages/'));

-- allocator_stacks: per stack, its frames as text (innermost first) and its site.
--   stack: ['filename:line:name', ...]; site: the first frame outside torch internals
--   (see _is_internal_frame), else the innermost frame; site_filename/line/name.
CREATE OR REPLACE VIEW allocator_stacks AS
WITH f AS (
    SELECT s.source_id, s.stack_id, u.depth, u.frame_id
    FROM stacks s,
         LATERAL (SELECT generate_subscripts(s.frame_ids, 1) AS depth,
                         unnest(s.frame_ids) AS frame_id) u
), j AS (
    SELECT f.source_id, f.stack_id, f.depth, fr.filename, fr.line, fr.name,
           COALESCE(fr.filename, '?') || ':' || COALESCE(CAST(fr.line AS VARCHAR), '?') || ':'
               || COALESCE(fr.name, '?') AS text,
           _is_internal_frame(fr.filename) AS internal
    FROM f JOIN frames fr USING (source_id, frame_id)
)
SELECT source_id, stack_id,
       list(text ORDER BY depth) AS stack,
       COALESCE(arg_min(text, depth) FILTER (WHERE NOT internal), arg_min(text, depth)) AS site,
       COALESCE(arg_min(filename, depth) FILTER (WHERE NOT internal), arg_min(filename, depth)) AS site_filename,
       COALESCE(arg_min(line, depth) FILTER (WHERE NOT internal), arg_min(line, depth)) AS site_line,
       COALESCE(arg_min(name, depth) FILTER (WHERE NOT internal), arg_min(name, depth)) AS site_name
FROM j GROUP BY source_id, stack_id;

-- blocks_live_at(timeline_id, event_index): the blocks allocated after that entry
-- (-1: at the start of the window), largest first.
--   address, size (whole block), requested_size, stream, site (the first frame outside
--   torch internals; '<no frames>' / '<no frames: made before the window>' as in
--   _allocator_sited_blocks), stack (all frames,
--   innermost first), alloc_index, free_index, origin, stack_from.
CREATE OR REPLACE MACRO blocks_live_at(tid, idx) AS TABLE
SELECT b.address, b.size, b.requested_size, b.stream,
       COALESCE(s.site, CASE WHEN b.origin = 'before_window'
                             THEN '<no frames: made before the window>'
                             ELSE '<no frames>' END) AS site,
       COALESCE(s.stack, []) AS stack,
       b.alloc_index, b.free_index, b.origin, b.stack_from, b.stack_id
FROM allocator_blocks b LEFT JOIN allocator_stacks s USING (source_id, stack_id)
WHERE b.timeline_id = tid AND COALESCE(b.alloc_index, -1) <= idx
  AND (b.free_index IS NULL OR b.free_index > idx)
ORDER BY b.size DESC, b.requested_size DESC, b.address;

-- _allocator_sited_blocks: allocator_blocks with their site (the stack's first frame
-- outside torch internals; '<no frames>' when torch recorded none, e.g. allocations of
-- the autograd engine's thread with stacks="python"; '<no frames: made before the
-- window>' for blocks made before recording began).
CREATE OR REPLACE VIEW _allocator_sited_blocks AS
SELECT b.*, COALESCE(s.site, CASE WHEN b.origin = 'before_window'
                                  THEN '<no frames: made before the window>'
                                  ELSE '<no frames>' END) AS site
FROM allocator_blocks b LEFT JOIN allocator_stacks s USING (source_id, stack_id);

-- allocation_sites: per snapshot timeline and allocation site.
--   allocations: allocs in the window; blocks: blocks seen alive (also those made
--   before the window); bytes_at_peak: requested bytes of its blocks live at
--   allocator_peak's event; max_bytes: the most its blocks held at once (requested
--   bytes), first reached at max_event_index (-1: the start of the window).
CREATE OR REPLACE VIEW allocation_sites AS
WITH d AS (
    SELECT timeline_id, site, COALESCE(alloc_index, -1) AS idx, requested_size AS delta
    FROM _allocator_sited_blocks
    UNION ALL
    SELECT timeline_id, site, free_index, -requested_size
    FROM _allocator_sited_blocks WHERE free_index IS NOT NULL
), c AS (
    SELECT timeline_id, site, idx,
           sum(sum(delta)) OVER (PARTITION BY timeline_id, site ORDER BY idx) AS live
    FROM d GROUP BY timeline_id, site, idx
), m AS (
    SELECT timeline_id, site, max(live) AS max_bytes,
           arg_min(idx, (-live, idx)) AS max_event_index
    FROM c GROUP BY timeline_id, site
), n AS (
    SELECT b.timeline_id, b.site,
           count(*) FILTER (WHERE b.origin = 'window') AS allocations,
           count(*) AS blocks,
           COALESCE(sum(b.requested_size) FILTER (
               WHERE COALESCE(b.alloc_index, -1) <= p.event_index
                 AND (b.free_index IS NULL OR b.free_index > p.event_index)), 0) AS bytes_at_peak
    FROM _allocator_sited_blocks b JOIN allocator_peak p USING (timeline_id)
    GROUP BY b.timeline_id, b.site
)
SELECT n.timeline_id, n.site, n.allocations, n.blocks, n.bytes_at_peak, m.max_bytes,
       m.max_event_index
FROM n JOIN m USING (timeline_id, site);
