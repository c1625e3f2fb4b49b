-- CUDA caching-allocator snapshots (ingest/cuda_snapshot.py): measured memory timelines.

-- frames: every distinct stack frame of a source (interned at ingest), numbered from 1.
--   filename, line, name as torch symbolized them; attrs: FX fields (fx_node_op, ...)
--   when the snapshot was augmented with them.
CREATE TABLE IF NOT EXISTS frames (
    source_id INTEGER NOT NULL,
    frame_id  INTEGER NOT NULL,
    filename  VARCHAR,
    line      BIGINT,
    name      VARCHAR,
    attrs     JSON
);

-- stacks: every distinct stack of a source: its frame ids, innermost first (as torch
-- lists them). events.stack_id refers to (source_id, stack_id).
CREATE TABLE IF NOT EXISTS stacks (
    source_id INTEGER NOT NULL,
    stack_id  INTEGER NOT NULL,
    frame_ids INTEGER[]
);

-- Caches (store/caches.py): exactly what _allocator_curve_derived and
-- _allocator_blocks_derived compute, per timeline, refreshed inside each ingest.
CREATE TABLE IF NOT EXISTS _cache_allocator_curve (
    timeline_id INTEGER, event_index BIGINT, time_us BIGINT,
    allocated_bytes BIGINT, reserved_bytes BIGINT, active_blocks BIGINT, block_bytes BIGINT
);
CREATE TABLE IF NOT EXISTS _cache_allocator_blocks (
    timeline_id INTEGER, source_id INTEGER, address BIGINT, size BIGINT,
    requested_size BIGINT, stream BIGINT, alloc_index BIGINT, free_requested_index BIGINT,
    free_index BIGINT, alloc_time_us BIGINT, free_time_us BIGINT, stack_id INTEGER,
    stack_from VARCHAR, origin VARCHAR
);

-- How a snapshot timeline reads (docs/allocator.md):
--   event_index: position of an entry in its device's trace (0-based, oldest first);
--     -1 stands for the state when the window begins, before its first entry.
--   allocated bytes: Σ requested sizes of the blocks allocated and not yet
--     free_completed (alloc adds the entry's size, free_completed removes it);
--   block bytes: the same in whole blocks (block_bytes: the allocator's rounding and
--     unsplit remainders), what torch.cuda.max_memory_allocated() counts;
--   reserved bytes: Σ sizes of the segments (segment_alloc/map add, segment_free/unmap
--     remove);
--   the start of the window = the end state (active blocks, segments) minus the
--     trace's net change: blocks made before the window are counted from the start.

-- allocator_events: every trace entry of every snapshot timeline.
--   action: alloc, free_requested, free_completed, segment_alloc, segment_free,
--     segment_map, segment_unmap, oom, snapshot (or another the dump names);
--   size: the entry's size (requested bytes; for segments the segment; for oom the
--     failed request); block_bytes: the whole block (see above);
--   alloc_index: on a free, the event_index of the alloc it frees (NULL: made before
--     the window); on a segment_free/unmap, of the segment_alloc/map;
--   device_free: on oom, what CUDA said was free; compile_context, user_metadata as
--     recorded; stack_id: frames in stacks/frames (same source_id); attrs: the rest.
CREATE OR REPLACE VIEW allocator_events AS
SELECT e.timeline_id, e.source_id, e.step AS event_index, e.op AS action, e.address,
       e.bytes AS size, e.block_bytes, e.stream, e.ts_ns // 1000 AS time_us, e.stack_id,
       e.correlation AS alloc_index,
       TRY_CAST(json_extract(e.attrs, '$.device_free') AS BIGINT) AS device_free,
       json_extract_string(e.attrs, '$.compile_context') AS compile_context,
       json_extract_string(e.attrs, '$.user_metadata') AS user_metadata, e.attrs
FROM events_allocator_action e;

-- allocator_segments_end, allocator_blocks_end: the allocator's state when the snapshot
-- was taken. state: active_allocated | active_pending_free | inactive;
-- requested_size: what was asked for (size: the whole block); alloc_index: the trace
-- entry that made it (NULL: before the window); pool: segment_type (small | large).
CREATE OR REPLACE VIEW allocator_segments_end AS
SELECT timeline_id, source_id, address, bytes AS size, stream, stack_id,
       correlation AS alloc_index,
       json_extract_string(attrs, '$.segment_type') AS pool,
       attrs->'$.segment_pool_id' AS segment_pool_id,
       TRY_CAST(json_extract(attrs, '$.allocated_size') AS BIGINT) AS allocated_size,
       TRY_CAST(json_extract(attrs, '$.is_expandable') AS BOOLEAN) AS is_expandable, attrs
FROM events_allocator_segment;

CREATE OR REPLACE VIEW allocator_blocks_end AS
SELECT timeline_id, source_id, address, block_bytes AS size, bytes AS requested_size,
       op AS state, stream, stack_id, correlation AS alloc_index, attrs
FROM events_allocator_block;

-- _allocator_delta(op, n), _reserved_delta(op, n): how one trace entry changes the allocated
-- bytes (n: its size; 1 for the active blocks; block_bytes for whole blocks) and the
-- reserved bytes.
CREATE OR REPLACE MACRO _allocator_delta(op, nbytes) AS
    CASE op WHEN 'alloc' THEN nbytes WHEN 'free_completed' THEN -nbytes ELSE 0 END;
CREATE OR REPLACE MACRO _reserved_delta(op, nbytes) AS
    CASE WHEN op IN ('segment_alloc', 'segment_map') THEN nbytes
         WHEN op IN ('segment_free', 'segment_unmap') THEN -nbytes ELSE 0 END;

-- _allocator_start: per timeline, the state at the start of the window (event -1):
-- the end state minus the trace's net change.
CREATE OR REPLACE VIEW _allocator_start AS
WITH tl AS (SELECT timeline_id FROM timeline_records WHERE format = 'cuda_snapshot'),
ends AS (
    SELECT timeline_id,
           sum(requested_size) FILTER (WHERE state <> 'inactive') AS allocated,
           sum(size) FILTER (WHERE state <> 'inactive') AS blocks_b,
           count(*) FILTER (WHERE state <> 'inactive') AS nblocks
    FROM allocator_blocks_end GROUP BY timeline_id
), segs AS (
    SELECT timeline_id, sum(size) AS reserved FROM allocator_segments_end GROUP BY timeline_id
), net AS (
    SELECT timeline_id,
           sum(_allocator_delta(op, bytes)) AS d_alloc,
           sum(_allocator_delta(op, block_bytes)) AS d_block,
           sum(_allocator_delta(op, 1)) AS d_n,
           sum(_reserved_delta(op, bytes)) AS d_res,
           min(ts_ns) // 1000 AS first_time
    FROM events_allocator_action GROUP BY timeline_id
)
SELECT tl.timeline_id,
       COALESCE(ends.allocated, 0) - COALESCE(net.d_alloc, 0) AS allocated_bytes,
       COALESCE(segs.reserved, 0) - COALESCE(net.d_res, 0) AS reserved_bytes,
       COALESCE(ends.nblocks, 0) - COALESCE(net.d_n, 0) AS active_blocks,
       COALESCE(ends.blocks_b, 0) - COALESCE(net.d_block, 0) AS block_bytes,
       net.first_time
FROM tl LEFT JOIN ends USING (timeline_id) LEFT JOIN segs USING (timeline_id)
LEFT JOIN net USING (timeline_id);

-- _allocator_curve_steps(timeline_id, lo, hi, a0, r0, n0, b0): the curve's rows for
-- event_index in [lo, hi]: from (a0, r0, n0, b0), the allocated bytes, reserved bytes,
-- active blocks and block bytes before entry lo, a running sum over the range. The store
-- fills the cache range by range (each range from the cache's row before it), so that no
-- window over a whole trace of millions of entries has to fit in memory at once.
CREATE OR REPLACE MACRO _allocator_curve_steps(tid, lo, hi, a0, r0, n0, b0) AS TABLE
SELECT e.timeline_id, e.step AS event_index, e.ts_ns // 1000 AS time_us,
       a0 + sum(_allocator_delta(e.op, e.bytes)) OVER w AS allocated_bytes,
       r0 + sum(_reserved_delta(e.op, e.bytes)) OVER w AS reserved_bytes,
       n0 + sum(_allocator_delta(e.op, 1)) OVER w AS active_blocks,
       b0 + sum(_allocator_delta(e.op, e.block_bytes)) OVER w AS block_bytes
FROM events_allocator_action e
WHERE e.timeline_id = tid AND e.step BETWEEN lo AND hi
WINDOW w AS (ORDER BY e.step ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW);

-- _allocator_cache_ranges(lo, hi, size): the pieces the store fills an allocator cache
-- of the snapshot timelines lo..hi in, in order: (timeline_id, -1, -1) for what comes
-- before the first entry, then (timeline_id, first, last) for `size` entries at a time.
CREATE OR REPLACE MACRO _allocator_cache_ranges(lo, hi, size) AS TABLE
SELECT t.timeline_id, -1 AS lo, -1 AS hi
FROM timeline_records t WHERE t.format = 'cuda_snapshot' AND t.timeline_id BETWEEN lo AND hi
UNION ALL
SELECT e.timeline_id, r * size, r * size + size - 1
FROM (SELECT timeline_id, max(step) AS last FROM events_allocator_action
      WHERE timeline_id BETWEEN lo AND hi GROUP BY timeline_id) e,
     LATERAL (SELECT unnest(range(0, e.last // size + 1)) AS r)
ORDER BY 1, 2;

-- _allocator_curve_derived: the curve computed from the events (cached in
-- _cache_allocator_curve by the same macro, range by range): the start (event -1), then
-- every entry.
CREATE OR REPLACE VIEW _allocator_curve_derived AS
SELECT timeline_id, -1 AS event_index, first_time AS time_us, allocated_bytes,
       reserved_bytes, active_blocks, block_bytes
FROM _allocator_start
UNION ALL
SELECT c.* FROM _allocator_start s,
     LATERAL _allocator_curve_steps(s.timeline_id, 0, 9223372036854775807, s.allocated_bytes,
                                    s.reserved_bytes, s.active_blocks, s.block_bytes) c;

-- allocator_curve: what the allocator held after each trace entry.
--   timeline_id, event_index (-1: the start of the window), time_us,
--   allocated_bytes (requested sizes), reserved_bytes (segments), active_blocks,
--   block_bytes (allocated in whole blocks: torch's memory_allocated()).
CREATE OR REPLACE VIEW allocator_curve AS
SELECT * FROM _cache_allocator_curve;

-- allocator_peak: per snapshot timeline, the first event reaching the maximum of
-- allocated_bytes (event_index -1 if the window's start is the maximum), its time and
-- bytes; reserved_bytes: the maximum reserved (at reserved_event_index); block_bytes /
-- block_event_index: the maximum in whole blocks (torch's max_memory_allocated() when
-- recording covered the whole run); consistent: false when the trace does not match its
-- allocations (timeline_notes say how), so that no one trusts a sum that is not one.
CREATE OR REPLACE VIEW allocator_peak AS
-- (the maxima, then the first entry reaching each: two plain scans of the curve; arg_min
-- over a (bytes, index) key took 10x longer, 0.75 s on a 100 MB snapshot's curve)
WITH m AS (
    SELECT timeline_id, max(allocated_bytes) AS allocated_bytes,
           max(reserved_bytes) AS reserved_bytes, max(block_bytes) AS block_bytes
    FROM allocator_curve GROUP BY timeline_id
), f AS (
    SELECT c.timeline_id,
           min(c.event_index) FILTER (WHERE c.allocated_bytes = m.allocated_bytes) AS event_index,
           min(c.event_index) FILTER (WHERE c.reserved_bytes = m.reserved_bytes)
               AS reserved_event_index,
           min(c.event_index) FILTER (WHERE c.block_bytes = m.block_bytes) AS block_event_index
    FROM allocator_curve c JOIN m USING (timeline_id) GROUP BY c.timeline_id
)
SELECT m.timeline_id, f.event_index, t.time_us, m.allocated_bytes, m.reserved_bytes,
       f.reserved_event_index, m.block_bytes, f.block_event_index,
       (SELECT bool_and(COALESCE(TRY_CAST(json_extract(n.attrs, '$.consistent') AS BOOLEAN), true))
        FROM timeline_notes n WHERE n.timeline_id = m.timeline_id) AS consistent
FROM m JOIN f USING (timeline_id)
LEFT JOIN allocator_curve t ON t.timeline_id = m.timeline_id AND t.event_index = f.event_index;

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

-- allocator_segment_lives: every segment the window saw, with its life.
--   alloc_index / free_index: the segment_alloc (map) and segment_free (unmap) entries
--   (NULL: before the window / still reserved at the end); pool: small | large, the end
--   state's segment_type where the segment is still there, else small for a 2 MiB
--   segment (kSmallBuffer: the small pool's only size) and large otherwise.
CREATE OR REPLACE VIEW allocator_segment_lives AS
WITH lives AS (
    SELECT a.timeline_id, a.source_id, a.address, a.size, a.stream, a.event_index AS alloc_index,
           f.event_index AS free_index
    FROM allocator_events a
    LEFT JOIN allocator_events f ON f.timeline_id = a.timeline_id
         AND f.alloc_index = a.event_index AND f.action IN ('segment_free', 'segment_unmap')
    WHERE a.action IN ('segment_alloc', 'segment_map')
    UNION ALL
    SELECT timeline_id, source_id, address, size, stream, NULL, event_index
    FROM allocator_events
    WHERE action IN ('segment_free', 'segment_unmap') AND alloc_index IS NULL
    UNION ALL
    SELECT timeline_id, source_id, address, size, stream, NULL, NULL
    FROM allocator_segments_end WHERE alloc_index IS NULL
)
SELECT l.*, COALESCE(e.pool, CASE WHEN l.size = 2097152 THEN 'small' ELSE 'large' END) AS pool
FROM lives l LEFT JOIN allocator_segments_end e
  ON e.timeline_id = l.timeline_id AND e.address = l.address
 AND e.alloc_index IS NOT DISTINCT FROM l.alloc_index AND l.free_index IS NULL;

-- _allocator_points: the moments fragmentation describes: the peak, and each OOM.
CREATE OR REPLACE VIEW _allocator_points AS
SELECT timeline_id, 'peak' AS moment, event_index, CAST(NULL AS BIGINT) AS requested_bytes,
       CAST(NULL AS BIGINT) AS request_stream
FROM allocator_peak
UNION ALL
SELECT timeline_id, 'oom', event_index, size, stream FROM allocator_events WHERE action = 'oom';

-- fragmentation: at the peak and at each OOM (moment: 'peak' | 'oom'), per stream and pool
-- (small | large):
--   reserved_bytes (its segments); allocated_bytes (requested bytes of its live blocks, as
--   allocator_curve counts them); block_bytes (the same blocks whole, as torch's
--   memory_allocated() and its OOM message's "allocated by PyTorch" count them: a block
--   is at least its request rounded up to 512 B, and a cached block reused for a smaller
--   request is not split when 1 MiB or less would remain);
--   reserved_unallocated_bytes = reserved_bytes - block_bytes: torch's figure, what its
--   OOM message calls "reserved by PyTorch but unallocated" (the rows of an OOM sum to
--   it); reserved_minus_requested = reserved_bytes - allocated_bytes: the same plus the
--   blocks' internal waste (= the free ranges' bytes + internal_waste);
--   largest_free_block (the largest free range of one of its segments: between live
--   blocks, or before the first / after the last), free_ranges (how many), internal_waste
--   = block_bytes - allocated_bytes;
--   for an OOM: requested_bytes (the failed request as the OOM's trace entry holds it:
--   already rounded by the allocator, see ooms), request_bytes_rounded (512-byte
--   multiples: the same figure unless the allocator was set to round otherwise), and on
--   the row of the request's stream and pool (small if the rounded size is <= 1 MiB)
--   request_fits: whether it would have fit in that largest free block. blocks_exact:
--   false when some block sizes of the timeline are estimates (timeline_notes
--   attrs.block_bytes_estimated), so free ranges are bounds.
CREATE OR REPLACE VIEW fragmentation AS
WITH segs AS (
    SELECT p.timeline_id, p.moment, p.event_index, s.address AS seg, s.size AS seg_size,
           s.stream, s.pool
    FROM _allocator_points p JOIN allocator_segment_lives s ON s.timeline_id = p.timeline_id
     AND COALESCE(s.alloc_index, -1) <= p.event_index
     AND (s.free_index IS NULL OR s.free_index > p.event_index)
), blks AS (
    SELECT p.timeline_id, p.moment, p.event_index, b.address, b.size, b.requested_size
    FROM _allocator_points p JOIN allocator_blocks b ON b.timeline_id = p.timeline_id
     AND COALESCE(b.alloc_index, -1) <= p.event_index
     AND (b.free_index IS NULL OR b.free_index > p.event_index)
), placed AS (
    SELECT s.*, b.address, b.size, b.requested_size
    FROM segs s LEFT JOIN blks b
      ON b.timeline_id = s.timeline_id AND b.moment = s.moment AND b.event_index = s.event_index
     AND b.address >= s.seg AND b.address < s.seg + s.seg_size
), gaps AS (
    SELECT *,
           address - COALESCE(lag(address + size) OVER w, seg) AS gap_before,
           CASE WHEN lead(address) OVER w IS NULL
                THEN seg + seg_size - COALESCE(address + size, seg) END AS gap_after
    FROM placed
    WINDOW w AS (PARTITION BY timeline_id, moment, event_index, seg ORDER BY address)
), per_group AS (
    SELECT timeline_id, moment, event_index, stream, pool,
           COALESCE(sum(requested_size), 0) AS allocated_bytes,
           COALESCE(sum(size), 0) AS block_bytes,
           COALESCE(sum(size - requested_size), 0) AS internal_waste,
           max(greatest(COALESCE(gap_before, 0), COALESCE(gap_after, 0))) AS largest_free_block,
           count(*) FILTER (WHERE gap_before > 0) + count(*) FILTER (WHERE gap_after > 0) AS free_ranges
    FROM gaps GROUP BY ALL
), reserved AS (
    SELECT timeline_id, moment, event_index, stream, pool, sum(seg_size) AS reserved_bytes
    FROM segs GROUP BY ALL
), exact AS (
    SELECT timeline_id,
           bool_and(COALESCE(TRY_CAST(json_extract(attrs, '$.block_bytes_estimated') AS BIGINT), 0) = 0) AS blocks_exact
    FROM timeline_notes GROUP BY timeline_id
)
SELECT g.timeline_id, g.moment, g.event_index, g.stream, g.pool, r.reserved_bytes,
       g.allocated_bytes, g.block_bytes,
       r.reserved_bytes - g.block_bytes AS reserved_unallocated_bytes,
       r.reserved_bytes - g.allocated_bytes AS reserved_minus_requested,
       g.largest_free_block, g.free_ranges, g.internal_waste,
       p.requested_bytes,
       CASE WHEN p.requested_bytes < 512 THEN 512
            ELSE (p.requested_bytes + 511) // 512 * 512 END AS request_bytes_rounded,
       CASE WHEN p.moment = 'oom' AND g.stream IS NOT DISTINCT FROM p.request_stream
             AND g.pool = CASE WHEN p.requested_bytes <= 1048576 THEN 'small' ELSE 'large' END
            THEN g.largest_free_block >= CASE WHEN p.requested_bytes < 512 THEN 512
                                              ELSE (p.requested_bytes + 511) // 512 * 512 END
       END AS request_fits,
       COALESCE(x.blocks_exact, true) AS blocks_exact
FROM per_group g JOIN reserved r USING (timeline_id, moment, event_index, stream, pool)
JOIN _allocator_points p USING (timeline_id, moment, event_index)
LEFT JOIN exact x USING (timeline_id)
ORDER BY g.timeline_id, g.event_index, g.stream, g.pool;

-- ooms: every OOM the allocator recorded.
--   requested_bytes: the failed request, as the OOM's trace entry holds it: the size the
--   allocator looked for a block of, the program's request already rounded (512-byte
--   multiples; PYTORCH_CUDA_ALLOC_CONF's roundup_power2_divisions may round more);
--   segment_bytes: the segment it then asked CUDA for and could not get, by the caching
--   allocator's rule (c10/cuda/CUDACachingAllocator.cpp, get_allocation_size): 2 MiB for
--   a request of 1 MiB or less, 20 MiB below 10 MiB, else the request rounded up to 2 MiB.
--   It is what torch's OOM message says it "Tried to allocate" and what an OOM observer
--   (torch._C._cuda_attach_out_of_memory_observer) gets as alloc: 1,835,008 B more than
--   requested_bytes for a 62.25 MiB request, 64 MiB; equal for a multiple of 2 MiB from
--   10 MiB up. (With expandable_segments the allocator maps pages into one segment
--   instead; the rule does not apply.)
--   device_free: what CUDA reported free;
--   allocated_bytes, reserved_bytes, block_bytes, active_blocks: allocator_curve at it;
--   reserved_unallocated_bytes = reserved_bytes - block_bytes: torch's "reserved by
--   PyTorch but unallocated" (its message counts whole blocks; reserved_bytes -
--   allocated_bytes also counts the blocks' internal waste);
--   largest_free_block / request_fits: from fragmentation (the request's stream and pool);
--   live_by_site: the live blocks grouped by allocation site, largest first:
--   [{site, blocks, bytes}] whose bytes sum to allocated_bytes.
CREATE OR REPLACE VIEW ooms AS
WITH live AS (
    SELECT o.timeline_id, o.event_index, b.site, count(*) AS blocks,
           sum(b.requested_size) AS bytes
    FROM allocator_events o JOIN _allocator_sited_blocks b ON b.timeline_id = o.timeline_id
     AND COALESCE(b.alloc_index, -1) <= o.event_index
     AND (b.free_index IS NULL OR b.free_index > o.event_index)
    WHERE o.action = 'oom' GROUP BY ALL
), by_site AS (
    SELECT timeline_id, event_index,
           list({'site': site, 'blocks': blocks, 'bytes': bytes} ORDER BY bytes DESC, site) AS live_by_site
    FROM live GROUP BY ALL
)
SELECT o.timeline_id, o.event_index, o.time_us, o.size AS requested_bytes, o.device_free,
       o.stream, c.allocated_bytes, c.reserved_bytes, c.block_bytes, c.active_blocks,
       f.largest_free_block, f.request_fits, s.live_by_site,
       CASE WHEN o.size <= 1048576 THEN 2097152 WHEN o.size < 10485760 THEN 20971520
            ELSE (o.size + 2097151) // 2097152 * 2097152 END AS segment_bytes,
       c.reserved_bytes - c.block_bytes AS reserved_unallocated_bytes
FROM allocator_events o
JOIN allocator_curve c USING (timeline_id, event_index)
LEFT JOIN by_site s USING (timeline_id, event_index)
LEFT JOIN fragmentation f ON f.timeline_id = o.timeline_id AND f.moment = 'oom'
     AND f.event_index = o.event_index AND f.request_fits IS NOT NULL
WHERE o.action = 'oom';

-- Planned versus actual: Inductor's output code (the wrapper's call()) beside what the
-- allocator did when it ran. A frame named `call` in a .py file is a wrapper frame; the
-- innermost one of an allocation's stack names the output-code line that allocated it.

-- _stack_wrapper_frame: per stack, its innermost frame of output code: named `call`, or
-- `partition_N` (a graph partition, which call dispatches), in a .py file.
CREATE OR REPLACE VIEW _stack_wrapper_frame AS
SELECT s.source_id, s.stack_id, arg_min(fr.filename, u.depth) AS filename,
       arg_min(fr.line, u.depth) AS line, arg_min(fr.name, u.depth) AS function
FROM stacks s,
     LATERAL (SELECT generate_subscripts(s.frame_ids, 1) AS depth,
                     unnest(s.frame_ids) AS frame_id) u
JOIN frames fr ON fr.source_id = s.source_id AND fr.frame_id = u.frame_id
WHERE (fr.name = 'call' OR regexp_matches(fr.name, '^partition_[0-9]+$'))
  AND ends_with(fr.filename, '.py')
GROUP BY s.source_id, s.stack_id;

-- _stack_has_optimizer: stacks with a frame in torch/optim (optimizer state, steps).
CREATE OR REPLACE VIEW _stack_has_optimizer AS
SELECT DISTINCT s.source_id, s.stack_id
FROM stacks s,
     LATERAL (SELECT unnest(s.frame_ids) AS frame_id) u
JOIN frames fr ON fr.source_id = s.source_id AND fr.frame_id = u.frame_id
WHERE regexp_matches(fr.filename, '(^|/)torch/optim/');

-- _wrapper_line_buffers: per wrapper timeline, the buffers each output-code line
-- allocates: a line's own buffer with bytes (empty_strided_*, an extern op's output), or,
-- for an op returning a tuple (`buf6 = torch.ops...(...)`, then `buf7 = buf6[0]`), the
-- tuple's elements in order (alloc_line = the op's line).
CREATE OR REPLACE VIEW _wrapper_line_buffers AS
WITH b AS (
    SELECT b.* FROM buffers b JOIN timeline_records t USING (timeline_id)
    WHERE t.format = 'inductor_wrapper' AND NOT b.is_input AND b.line IS NOT NULL
)
SELECT o.timeline_id AS wrapper_timeline_id, COALESCE(t.line, o.line) AS alloc_line,
       o.buffer, o.bytes, o.alloc_step, o.last_step, o.line AS buffer_line,
       row_number() OVER (PARTITION BY o.timeline_id, COALESCE(t.line, o.line)
                          ORDER BY o.line, o.buffer) AS ord
FROM b o LEFT JOIN b t
  ON t.timeline_id = o.timeline_id AND t.layout = 'tuple' AND o.layout = 'extern_output'
 AND t.alloc_step = o.alloc_step AND t.producer = o.producer AND t.line < o.line
WHERE o.bytes > 0 OR o.bytes IS NULL;  -- a symbolic size (dynamic shapes) maps by order

-- wrapper_files: which output code each wrapper file of the snapshots' frames is.
--   A file maps to the wrapper timeline whose allocating lines hold the most of the
--   lines the file's allocations came from (by_name: the timeline was ingested from a
--   file of the same name, which wins); a tie leaves it unmapped (wrapper_timeline_id
--   NULL). hits / lines: how many of the file's allocation lines that timeline allocates at.
--   A graph's repeats in other artifacts (the same AOT id: its output_code.py, its copy in
--   a torch log and in a TORCH_TRACE log) are one candidate: the same code fitting equally
--   is no tie; the output_code.py stands for them (else the first ingested).
CREATE OR REPLACE VIEW wrapper_files AS
WITH al AS (
    SELECT DISTINCT a.source_id, w.filename, w.line
    FROM allocator_events a JOIN _stack_wrapper_frame w USING (source_id, stack_id)
    WHERE a.action = 'alloc'
), lines AS (
    SELECT source_id, filename, count(*) AS lines FROM al GROUP BY ALL
), score AS (
    SELECT al.source_id, al.filename, l.wrapper_timeline_id,
           count(DISTINCT al.line) AS hits,
           any_value(regexp_extract(s.path, '[^/]*$') = regexp_extract(al.filename, '[^/]*$')) AS by_name,
           COALESCE(any_value(json_extract_string(t.attrs, '$.aot_id')),
                    CAST(l.wrapper_timeline_id AS VARCHAR)) AS graph,
           any_value(ends_with(s.path, '.py')) AS own_file
    FROM al JOIN _wrapper_line_buffers l ON l.alloc_line = al.line
    JOIN timeline_records t ON t.timeline_id = l.wrapper_timeline_id
    JOIN sources s ON s.source_id = t.source_id
    GROUP BY al.source_id, al.filename, l.wrapper_timeline_id
), graphs AS (  -- one row per graph: its output_code.py, else its first timeline
    SELECT * FROM score
    QUALIFY row_number() OVER (PARTITION BY source_id, filename, by_name, hits, graph
                               ORDER BY own_file DESC, wrapper_timeline_id) = 1
), ranked AS (
    SELECT *, rank() OVER (PARTITION BY source_id, filename ORDER BY by_name DESC, hits DESC) AS r,
           count(*) OVER (PARTITION BY source_id, filename, by_name, hits) AS same
    FROM graphs
)
SELECT l.source_id, l.filename, l.lines,
       CASE WHEN r.same = 1 THEN r.wrapper_timeline_id END AS wrapper_timeline_id,
       r.hits, COALESCE(r.by_name, false) AS by_name,
       CASE WHEN r.wrapper_timeline_id IS NULL THEN 'no ingested output code allocates at these lines'
            WHEN r.same > 1 THEN 'several output codes fit equally' END AS unmapped_reason
FROM lines l LEFT JOIN (SELECT * FROM ranked WHERE r = 1) r USING (source_id, filename)
QUALIFY row_number() OVER (PARTITION BY l.source_id, l.filename ORDER BY r.wrapper_timeline_id) = 1;

-- _wrapper_allocs: every alloc of a snapshot timeline with its wrapper frame (if any) and
-- the graph call it belongs to: a call is a run of consecutive allocs (in trace order)
-- from the same wrapper file; call_index numbers the calls of a timeline from 0.
CREATE OR REPLACE VIEW _wrapper_allocs AS
WITH a AS (
    SELECT a.timeline_id, a.source_id, a.event_index, a.size, a.stream, w.filename, w.line,
           lag(w.filename) OVER (PARTITION BY a.timeline_id ORDER BY a.event_index) AS prev
    FROM allocator_events a LEFT JOIN _stack_wrapper_frame w USING (source_id, stack_id)
    WHERE a.action = 'alloc'
), runs AS (
    SELECT *, sum(CASE WHEN filename IS DISTINCT FROM prev THEN 1 ELSE 0 END)
                  OVER (PARTITION BY timeline_id ORDER BY event_index) AS run
    FROM a
)
SELECT r.*, dense_rank() OVER (PARTITION BY r.timeline_id ORDER BY r.run) - 1 AS call_index,
       f.wrapper_timeline_id
FROM runs r JOIN wrapper_files f USING (source_id, filename)
WHERE r.filename IS NOT NULL;

-- graph_calls: each run of a compiled graph's call() in a snapshot timeline.
--   first_event / last_event: its first and last alloc; stream: of its first alloc.
CREATE OR REPLACE VIEW graph_calls AS
SELECT timeline_id, call_index, any_value(source_id) AS source_id, any_value(filename) AS filename,
       any_value(wrapper_timeline_id) AS wrapper_timeline_id,
       min(event_index) AS first_event, max(event_index) AS last_event,
       arg_min(stream, event_index) AS stream, count(*) AS allocations
FROM _wrapper_allocs GROUP BY timeline_id, call_index;

-- _call_alloc_map: each alloc of a call matched to a planned buffer of its line: first by
-- size (the k-th alloc of n bytes at a line is the k-th buffer of n bytes that line
-- allocates), then what is left at the line by order (size_matches false there); an
-- alloc with no buffer left keeps buffer NULL.
CREATE OR REPLACE VIEW _call_alloc_map AS
WITH a AS (
    SELECT w.*, row_number() OVER (PARTITION BY w.timeline_id, w.call_index, w.line, w.size
                                   ORDER BY w.event_index) AS ord
    FROM _wrapper_allocs w
), c AS (
    SELECT g.timeline_id, g.call_index, l.*,
           row_number() OVER (PARTITION BY g.timeline_id, g.call_index, l.alloc_line, l.bytes
                              ORDER BY l.buffer_line, l.buffer) AS ord_size
    FROM graph_calls g JOIN _wrapper_line_buffers l USING (wrapper_timeline_id)
), by_size AS (
    SELECT a.timeline_id, a.call_index, a.event_index, c.buffer
    FROM a JOIN c ON c.timeline_id = a.timeline_id AND c.call_index = a.call_index
     AND c.alloc_line = a.line AND c.bytes = a.size AND c.ord_size = a.ord
), rest_a AS (
    SELECT a.*, row_number() OVER (PARTITION BY a.timeline_id, a.call_index, a.line
                                   ORDER BY a.event_index) AS ord2
    FROM a WHERE NOT EXISTS (SELECT 1 FROM by_size b WHERE b.timeline_id = a.timeline_id
                             AND b.event_index = a.event_index)
), rest_c AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.timeline_id, c.call_index, c.alloc_line
                                   ORDER BY c.buffer_line, c.buffer) AS ord2
    FROM c WHERE NOT EXISTS (SELECT 1 FROM by_size b WHERE b.timeline_id = c.timeline_id
                             AND b.call_index = c.call_index AND b.buffer = c.buffer)
), by_order AS (
    SELECT r.timeline_id, r.call_index, r.event_index, c.buffer
    FROM rest_a r JOIN rest_c c ON c.timeline_id = r.timeline_id AND c.call_index = r.call_index
     AND c.alloc_line = r.line AND c.ord2 = r.ord2
), matched AS (SELECT * FROM by_size UNION ALL SELECT * FROM by_order)
SELECT a.timeline_id, a.call_index, a.event_index, a.line, a.wrapper_timeline_id,
       l.buffer, l.bytes AS planned_bytes, l.alloc_step, l.last_step
FROM a LEFT JOIN matched m USING (timeline_id, call_index, event_index)
LEFT JOIN _wrapper_line_buffers l ON l.wrapper_timeline_id = a.wrapper_timeline_id
     AND l.buffer = m.buffer;

-- planned_vs_actual: per graph call and buffer, what the output code planned beside what
-- the allocator did. One row per planned buffer of the call's wrapper (status 'mapped',
-- or 'not_allocated' when no allocation of the call came from its line) and per
-- allocation of the call that maps to no buffer (status 'unmapped', with why).
--   timeline_id, call_index: the snapshot timeline and graph call (graph_calls);
--   wrapper_timeline_id, graph (the wrapper timeline's name, e.g. 0_forward);
--   buffer, planned_bytes, planned_alloc_step, planned_last_step: the wrapper's plan
--   (buffers view); line: the output-code line that allocates it;
--   alloc_index, address, requested_size, block_size, stream, free_index: the allocator's
--   block (allocator_blocks); lifetime_us: free time - alloc time (NULL: alive after the
--   trace); actual_last_step: the last wrapper step before the line that freed it (NULL:
--   freed outside the call, e.g. an output saved for backward); size_matches:
--   requested_size = planned_bytes; reason: why a row is not mapped.
CREATE OR REPLACE VIEW planned_vs_actual AS
WITH m AS (
    SELECT c.*, b.address, b.requested_size, b.size AS block_size, b.stream, b.free_index,
           b.free_time_us - b.alloc_time_us AS lifetime_us, b.source_id
    FROM _call_alloc_map c JOIN allocator_blocks b
      ON b.timeline_id = c.timeline_id AND b.alloc_index = c.event_index
), freed AS (
    SELECT m.timeline_id, m.event_index, w.line AS free_line
    FROM m JOIN allocator_events f ON f.timeline_id = m.timeline_id
         AND f.action = 'free_completed' AND f.event_index = m.free_index
    JOIN _stack_wrapper_frame w ON w.source_id = f.source_id AND w.stack_id = f.stack_id
    JOIN graph_calls g ON g.timeline_id = m.timeline_id AND g.call_index = m.call_index
         AND w.filename = g.filename
), mapped AS (
    SELECT m.timeline_id, m.call_index, m.wrapper_timeline_id, m.buffer, m.planned_bytes,
           m.alloc_step AS planned_alloc_step, m.last_step AS planned_last_step, m.line,
           m.event_index AS alloc_index, m.address, m.requested_size, m.block_size, m.stream,
           m.free_index, m.lifetime_us,
           (SELECT max(n.step) FROM nodes n WHERE n.timeline_id = m.wrapper_timeline_id
                                              AND n.line < fr.free_line) AS actual_last_step,
           CASE WHEN m.buffer IS NOT NULL THEN 'mapped' ELSE 'unmapped' END AS status,
           CASE WHEN m.wrapper_timeline_id IS NULL THEN 'no ingested output code for its file'
                WHEN m.buffer IS NULL AND NOT EXISTS (
                    SELECT 1 FROM _wrapper_line_buffers l
                    WHERE l.wrapper_timeline_id = m.wrapper_timeline_id AND l.alloc_line = m.line)
                    THEN 'its line allocates no buffer in the output code (a kernel''s own workspace)'
                WHEN m.buffer IS NULL THEN 'no planned buffer left at its line: the op''s own scratch'
           END AS reason
    FROM m LEFT JOIN freed fr USING (timeline_id, event_index)
), planned AS (
    SELECT g.timeline_id, g.call_index, g.wrapper_timeline_id, l.buffer, l.bytes,
           l.alloc_step, l.last_step, l.alloc_line
    FROM graph_calls g JOIN _wrapper_line_buffers l USING (wrapper_timeline_id)
)
SELECT x.*, t.name AS graph, x.requested_size = x.planned_bytes AS size_matches
FROM (
    SELECT * FROM mapped
    UNION ALL
    SELECT p.timeline_id, p.call_index, p.wrapper_timeline_id, p.buffer, p.bytes,
           p.alloc_step, p.last_step, p.alloc_line, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, 'not_allocated',
           'no allocation of this call came from its line (a CPU tensor, or not made on the device)'
    FROM planned p
    WHERE NOT EXISTS (SELECT 1 FROM mapped q WHERE q.timeline_id = p.timeline_id
                      AND q.call_index = p.call_index AND q.buffer = p.buffer)
) x LEFT JOIN timeline_records t ON t.timeline_id = x.wrapper_timeline_id;

-- planned_vs_actual_calls: per graph call, the wrapper's planned peak beside the
-- measured allocated peak during the call, and what the measured peak holds.
--   planned_peak_bytes / planned_peak_step: peak_memory of the wrapper timeline (its own
--   buffers, inputs excluded); measured_peak_bytes / measured_peak_event: the maximum of
--   allocator_curve.allocated_bytes from the call's first to its last alloc;
--   planned_bytes_at_measured_step: the wrapper's live bytes (memory_curve) at the step of
--   the buffer whose alloc made the measured peak (NULL if that alloc is unmapped).
--   The blocks live at the measured peak, by who made them (requested bytes; they sum to
--   measured_peak_bytes): planned_live_bytes (this call, mapped to planned buffers),
--   unplanned_call_bytes (this call, no planned buffer: workspaces), other_graph_bytes
--   (made by another compiled graph's call: for a backward, what the forward saved),
--   optimizer_bytes (a frame in torch/optim: optimizer state), before_window_bytes
--   (made before recording began and never seen allocated: parameters and the like),
--   other_bytes (everything else: inputs, eager tensors). Beside them, not in the sum:
--   rounding_bytes = Σ (block size - requested size) of those blocks (the allocator's
--   rounding, which memory_allocated() counts), other_stream_bytes (requested bytes of
--   those blocks on streams other than the call's). mapped_allocations /
--   unmapped_allocations / not_allocated_buffers: counts from planned_vs_actual.
CREATE OR REPLACE VIEW planned_vs_actual_calls AS
WITH peak AS (
    SELECT g.timeline_id, g.call_index,
           max(c.allocated_bytes) AS measured_peak_bytes,
           arg_min(c.event_index, (-c.allocated_bytes, c.event_index)) AS measured_peak_event
    FROM graph_calls g JOIN allocator_curve c ON c.timeline_id = g.timeline_id
     AND c.event_index BETWEEN g.first_event AND g.last_event
    GROUP BY ALL
), live AS (
    SELECT p.timeline_id, p.call_index, b.requested_size, b.size, b.stream, b.origin,
           b.alloc_index, m.buffer, m.event_index IS NOT NULL AS in_call,
           w.filename AS made_by_file, o.stack_id IS NOT NULL AS optim,
           wf.filename IS NOT NULL AS other_graph, g.first_event, g.stream AS call_stream
    FROM peak p JOIN graph_calls g USING (timeline_id, call_index)
    JOIN allocator_blocks b ON b.timeline_id = p.timeline_id
     AND COALESCE(b.alloc_index, -1) <= p.measured_peak_event
     AND (b.free_index IS NULL OR b.free_index > p.measured_peak_event)
    LEFT JOIN _call_alloc_map m ON m.timeline_id = p.timeline_id AND m.call_index = p.call_index
     AND m.event_index = b.alloc_index
    LEFT JOIN _stack_wrapper_frame w ON w.source_id = b.source_id AND w.stack_id = b.stack_id
    LEFT JOIN _stack_has_optimizer o ON o.source_id = b.source_id AND o.stack_id = b.stack_id
    LEFT JOIN (SELECT DISTINCT filename FROM wrapper_files WHERE wrapper_timeline_id IS NOT NULL) wf
      ON wf.filename = w.filename
), classed AS (  -- (joins, not correlated EXISTS: 12.8 -> 1.x s on the OOM fixture)
    SELECT *,
           CASE WHEN alloc_index >= first_event AND in_call
                    THEN (CASE WHEN buffer IS NOT NULL THEN 'planned' ELSE 'unplanned' END)
                WHEN made_by_file IS NOT NULL AND other_graph THEN 'other_graph'
                WHEN optim THEN 'optimizer'
                WHEN origin = 'before_window' THEN 'before_window'
                ELSE 'other' END AS class
    FROM live
), sums AS (
    SELECT timeline_id, call_index,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'planned'), 0) AS planned_live_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'unplanned'), 0) AS unplanned_call_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'other_graph'), 0) AS other_graph_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'optimizer'), 0) AS optimizer_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'before_window'), 0) AS before_window_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'other'), 0) AS other_bytes,
           COALESCE(sum(size - requested_size), 0) AS rounding_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE stream IS DISTINCT FROM call_stream), 0) AS other_stream_bytes
    FROM classed GROUP BY ALL
), counts AS (
    SELECT timeline_id, call_index,
           count(*) FILTER (WHERE status = 'mapped') AS mapped_allocations,
           count(*) FILTER (WHERE status = 'unmapped') AS unmapped_allocations,
           count(*) FILTER (WHERE status = 'not_allocated') AS not_allocated_buffers
    FROM planned_vs_actual GROUP BY ALL
)
SELECT g.timeline_id, g.call_index, g.wrapper_timeline_id, t.name AS graph,
       g.first_event, g.last_event, pm.peak_bytes AS planned_peak_bytes,
       pm.peak_step AS planned_peak_step, p.measured_peak_bytes, p.measured_peak_event,
       (SELECT mc.live_bytes FROM memory_curve mc WHERE mc.timeline_id = g.wrapper_timeline_id
          AND mc.step = (SELECT q.alloc_step FROM _call_alloc_map q
                         WHERE q.timeline_id = g.timeline_id AND q.call_index = g.call_index
                           AND q.event_index = p.measured_peak_event)) AS planned_bytes_at_measured_step,
       s.planned_live_bytes, s.unplanned_call_bytes, s.other_graph_bytes, s.optimizer_bytes,
       s.before_window_bytes, s.other_bytes, s.rounding_bytes, s.other_stream_bytes,
       c.mapped_allocations, c.unmapped_allocations, c.not_allocated_buffers
FROM graph_calls g JOIN peak p USING (timeline_id, call_index)
LEFT JOIN sums s USING (timeline_id, call_index)
LEFT JOIN counts c USING (timeline_id, call_index)
LEFT JOIN timeline_records t ON t.timeline_id = g.wrapper_timeline_id
LEFT JOIN peak_memory pm ON pm.timeline_id = g.wrapper_timeline_id
ORDER BY g.timeline_id, g.call_index;

-- allocator_pools: per snapshot timeline and memory pool, what it holds and who made it.
-- A pool is a segment_pool_id: (0, 0) the default pool, any other a private pool: the one
-- a CUDA graph's capture allocates from (CUDA graph trees share one per device), or a
-- torch.cuda.MemPool. The pool of a segment is the end state's (a segment freed inside
-- the window has none: pool_id NULL); a block is in the pool of the segment it lay in.
--   pool_id: the id as JSON text ('[0,1]'; NULL: segments freed in the window);
--   kind: default | graph (a private pool compiled code allocated in: its frames are
--   output code's call or partition_N) | private (any other: a MemPool, a pool nothing was
--   allocated in during the window) | unknown (pool_id NULL);
--   segments_end, reserved_end_bytes, allocated_end_bytes (requested sizes of its active
--   blocks), small_segments / large_segments: the end state's;
--   allocations / allocated_bytes: the blocks the window saw in it (requested sizes);
--   owners: who made them, largest first: [{owner, function, allocations, bytes}] where
--   owner is the output-code timeline (its name) their innermost call/partition_N frame
--   is in (wrapper_files), else that frame's file, else the allocation site.
CREATE OR REPLACE VIEW allocator_pools AS
WITH seg AS (
    SELECT l.timeline_id, l.address, l.size, l.alloc_index, l.free_index,
           CAST(e.segment_pool_id AS VARCHAR) AS pool_id
    FROM allocator_segment_lives l
    LEFT JOIN allocator_segments_end e
      ON e.timeline_id = l.timeline_id AND e.address = l.address AND l.free_index IS NULL
     AND e.alloc_index IS NOT DISTINCT FROM l.alloc_index
), blk AS (
    SELECT b.timeline_id, b.source_id, b.stack_id, b.requested_size, b.site, s.pool_id
    FROM _allocator_sited_blocks b JOIN seg s
      ON s.timeline_id = b.timeline_id AND b.address >= s.address
     AND b.address < s.address + s.size
     AND COALESCE(s.alloc_index, -1) <= COALESCE(b.alloc_index, -1)
     AND (s.free_index IS NULL OR s.free_index > COALESCE(b.alloc_index, -1))
), made AS (
    SELECT b.timeline_id, b.pool_id,
           COALESCE(t.name, w.filename, b.site) AS owner, w.function,
           count(*) AS allocations, CAST(sum(b.requested_size) AS BIGINT) AS bytes,
           bool_or(w.function IS NOT NULL) AS by_code
    FROM blk b
    LEFT JOIN _stack_wrapper_frame w ON w.source_id = b.source_id AND w.stack_id = b.stack_id
    LEFT JOIN wrapper_files f ON f.source_id = b.source_id AND f.filename = w.filename
    LEFT JOIN timeline_records t ON t.timeline_id = f.wrapper_timeline_id
    GROUP BY ALL
), by_pool AS (
    SELECT timeline_id, pool_id, CAST(sum(allocations) AS BIGINT) AS allocations,
           CAST(sum(bytes) AS BIGINT) AS allocated_bytes, bool_or(by_code) AS by_code,
           list({'owner': owner, 'function': function, 'allocations': allocations,
                 'bytes': bytes} ORDER BY bytes DESC, owner) AS owners
    FROM made GROUP BY ALL
), ends AS (
    SELECT s.timeline_id, CAST(s.segment_pool_id AS VARCHAR) AS pool_id,
           count(*) AS segments_end, CAST(sum(s.size) AS BIGINT) AS reserved_end_bytes,
           count(*) FILTER (WHERE s.pool = 'small') AS small_segments,
           count(*) FILTER (WHERE s.pool = 'large') AS large_segments
    FROM allocator_segments_end s GROUP BY ALL
), active AS (
    SELECT s.timeline_id, CAST(s.segment_pool_id AS VARCHAR) AS pool_id,
           CAST(sum(b.requested_size) AS BIGINT) AS allocated_end_bytes
    FROM allocator_segments_end s JOIN allocator_blocks_end b
      ON b.timeline_id = s.timeline_id AND b.address >= s.address
     AND b.address < s.address + s.size AND b.state <> 'inactive'
    GROUP BY ALL
), pools AS (
    SELECT timeline_id, pool_id FROM ends
    UNION SELECT timeline_id, pool_id FROM by_pool
)
SELECT p.timeline_id, p.pool_id,
       CASE WHEN p.pool_id IS NULL THEN 'unknown' WHEN p.pool_id = '[0,0]' THEN 'default'
            WHEN COALESCE(b.by_code, false) THEN 'graph' ELSE 'private' END AS kind,
       COALESCE(e.segments_end, 0) AS segments_end,
       COALESCE(e.reserved_end_bytes, 0) AS reserved_end_bytes,
       COALESCE(a.allocated_end_bytes, 0) AS allocated_end_bytes,
       COALESCE(e.small_segments, 0) AS small_segments,
       COALESCE(e.large_segments, 0) AS large_segments,
       COALESCE(b.allocations, 0) AS allocations,
       COALESCE(b.allocated_bytes, 0) AS allocated_bytes, COALESCE(b.owners, []) AS owners
FROM pools p
LEFT JOIN ends e ON e.timeline_id = p.timeline_id AND e.pool_id IS NOT DISTINCT FROM p.pool_id
LEFT JOIN active a ON a.timeline_id = p.timeline_id AND a.pool_id IS NOT DISTINCT FROM p.pool_id
LEFT JOIN by_pool b ON b.timeline_id = p.timeline_id AND b.pool_id IS NOT DISTINCT FROM p.pool_id
ORDER BY p.timeline_id, p.pool_id;
