-- The allocator's curve over a snapshot's trace: what it held after each entry, and its
-- peak (rules: 50_allocator_events.sql's opening comments).

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
