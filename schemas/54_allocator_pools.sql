-- Memory pools of allocator snapshots: what each holds and who made it.

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
