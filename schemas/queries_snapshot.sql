-- Named queries of the allocator-snapshot ingest (store/writer.py) and its summaries.

-- name: append_frames
INSERT INTO frames SELECT * FROM _tlview_rows;

-- name: append_stacks
INSERT INTO stacks SELECT * FROM _tlview_rows;

-- Cache refresh (store/caches.py), per timeline range.
-- name: cache_clear_allocator_curve
DELETE FROM _cache_allocator_curve WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_ranges_allocator_curve
-- The curve is filled in ranges (store/caches.py): the start (-1), then 245,760 entries at
-- a time (two of DuckDB's row groups: each statement appends whole ones, which the close's
-- checkpoint need not merge), each from the cache's row before it (13 columns of Arrow in
-- the process: 26 MB).
SELECT * FROM _allocator_cache_ranges($1, $2, 245760);

-- name: cache_fill_allocator_curve
-- Range -1: the start. The entries' ranges are filled by store/caches.py from
-- allocator_curve_deltas (a running sum in Arrow: what _allocator_curve_steps computes,
-- without DuckDB's window, which cost more: docs/benchmarks.md).
INSERT INTO _cache_allocator_curve BY NAME
SELECT timeline_id, -1 AS event_index, first_time AS time_us, allocated_bytes, reserved_bytes,
       active_blocks, block_bytes
FROM _allocator_start WHERE timeline_id = $1 AND $2 = -1 AND $3 = -1;

-- name: allocator_curve_before
-- The cached curve's row before entry $2 of timeline $1: where range [$2, ...] starts from.
SELECT allocated_bytes, reserved_bytes, active_blocks, block_bytes FROM _cache_allocator_curve
WHERE timeline_id = $1 AND event_index = $2 - 1;

-- name: allocator_curve_deltas
-- Entries $2..$3 of timeline $1 in order: how each changes the curve's four sums
-- (_allocator_curve_steps' terms).
SELECT e.step AS event_index, e.ts_ns // 1000 AS time_us,
       _allocator_delta(e.op, e.bytes)::BIGINT AS allocated_bytes,
       _reserved_delta(e.op, e.bytes)::BIGINT AS reserved_bytes,
       _allocator_delta(e.op, 1)::BIGINT AS active_blocks,
       _allocator_delta(e.op, e.block_bytes)::BIGINT AS block_bytes
FROM events_allocator_action e
WHERE e.timeline_id = $1 AND e.step BETWEEN $2 AND $3
ORDER BY e.step;

-- name: append_allocator_curve
INSERT INTO _cache_allocator_curve BY NAME SELECT * FROM _tlview_rows;

-- name: cache_clear_allocator_blocks
DELETE FROM _cache_allocator_blocks WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_ranges_allocator_blocks
-- The blocks are filled in ranges (store/caches.py): those made before the window (-1),
-- then those allocated by 2**20 entries at a time.
SELECT * FROM _allocator_cache_ranges($1, $2, 1048576);

-- name: cache_fill_allocator_blocks
INSERT INTO _cache_allocator_blocks BY NAME
SELECT * FROM _allocator_blocks_before WHERE timeline_id = $1 AND $2 = -1 AND $3 = -1
UNION ALL
SELECT * FROM _allocator_blocks_window($1, $2, $3) WHERE $2 >= 0;

-- The `tlview ingest` / `tlview info` summary of a snapshot timeline (cli/snapshot_summary.py).
-- name: snapshot_summary
-- allocator_peak's figures for one timeline (cli/snapshot_summary.py), read as it defines
-- them (the first entry reaching each maximum) by plain scans of the cached curve with the
-- maxima found first, as the terminal UI reads them: allocator_peak's arg_min over (bytes,
-- index) pairs, and lookups correlated with it, took seconds on millions of entries.
-- This one: the maxima ($1: the timeline).
SELECT count(*) AS n_rows, max(allocated_bytes) AS allocated_bytes,
       max(reserved_bytes) AS reserved_bytes, max(block_bytes) AS block_bytes,
       (SELECT count(*) FROM allocator_events e WHERE e.timeline_id = $1) AS n_events
FROM allocator_curve WHERE timeline_id = $1;

-- name: snapshot_summary_firsts
-- The first entry at each maximum ($2 allocated, $3 reserved, $4 block bytes).
SELECT min(event_index) FILTER (WHERE allocated_bytes = $2) AS event_index,
       min(event_index) FILTER (WHERE reserved_bytes = $3) AS reserved_event_index,
       min(event_index) FILTER (WHERE block_bytes = $4) AS block_event_index
FROM allocator_curve WHERE timeline_id = $1;

-- name: snapshot_actions
SELECT action, count(*) FROM allocator_events WHERE timeline_id = ?
GROUP BY action ORDER BY count(*) DESC, action;

-- name: snapshot_top_site
-- allocation_sites' largest bytes_at_peak ($2: allocator_peak's event_index), computed
-- for that one figure (the view's other columns run a window over every block).
SELECT site, sum(requested_size) AS bytes_at_peak FROM _allocator_sited_blocks
WHERE timeline_id = $1 AND COALESCE(alloc_index, -1) <= $2
  AND (free_index IS NULL OR free_index > $2)
GROUP BY site HAVING sum(requested_size) > 0
ORDER BY bytes_at_peak DESC, site LIMIT 1;

-- name: snapshot_ooms
SELECT event_index, time_us, requested_bytes, segment_bytes, device_free, allocated_bytes,
       block_bytes, reserved_bytes, reserved_unallocated_bytes, largest_free_block, request_fits
FROM ooms WHERE timeline_id = ? ORDER BY event_index;

-- What a snapshot screen of the terminal UI reads (store/snapshot_queries.py): range reads
-- of the cached curve and blocks, never a recomputation.
-- allocator_peak's figures for one timeline, read as it defines them (the first entry
-- reaching the largest allocated bytes; the largest reserved and the first entry reaching
-- it) by plain scans of the cached curve with the maxima as parameters
-- (store/snapshot_queries.py): allocator_peak's arg_min over (bytes, index) pairs takes
-- seconds on millions of entries, and a correlated form is planned as a join over the
-- whole curve; these take a few tenths of one.
-- name: snap_curve_max
SELECT count(*) - 1 AS n_events, max(allocated_bytes), max(reserved_bytes), max(block_bytes)
FROM allocator_curve WHERE timeline_id = $1;

-- name: snap_first_reaching
SELECT min(event_index) FILTER (WHERE allocated_bytes >= $2),
       min(event_index) FILTER (WHERE reserved_bytes >= $3)
FROM allocator_curve WHERE timeline_id = $1;

-- name: snap_times
SELECT event_index, time_us FROM allocator_curve
WHERE timeline_id = $1 AND event_index IN ($2, $3, -1);

-- name: snap_consistent
-- As allocator_peak.consistent: false (or NULL) when the ingest's note says the trace
-- does not match its allocations.
SELECT bool_and(COALESCE(TRY_CAST(json_extract(n.attrs, '$.consistent') AS BOOLEAN), true))
FROM timeline_notes n WHERE n.timeline_id = $1;

-- name: snap_peak_maxima
-- Every snapshot timeline's largest allocated bytes (the chooser's peak column).
SELECT timeline_id, max(allocated_bytes) FROM allocator_curve GROUP BY timeline_id
ORDER BY timeline_id;

-- name: snap_curve_buckets
-- The curve squeezed into $2 columns over $3 rows (event -1 included): per column the
-- largest allocated and reserved bytes.
SELECT CAST(floor((event_index + 1) * $2 / $3) AS BIGINT) AS col,
       max(allocated_bytes), max(reserved_bytes)
FROM allocator_curve WHERE timeline_id = $1 GROUP BY col ORDER BY col;

-- name: snap_at
SELECT c.event_index, c.time_us, e.action, e.size, e.address, c.allocated_bytes,
       c.reserved_bytes, c.active_blocks, c.block_bytes, e.stream, e.device_free
FROM allocator_curve c LEFT JOIN allocator_events e
  ON e.timeline_id = c.timeline_id AND e.event_index = c.event_index
WHERE c.timeline_id = $1 AND c.event_index = $2;

-- name: snap_sites_at
-- The blocks live after entry $2, grouped by site, largest first ($3 sites at most);
-- stack_id: the largest block's stack, stacks: how many distinct stacks the site has.
SELECT site, count(*) AS blocks, sum(requested_size) AS bytes, sum(size) AS block_bytes,
       arg_max(stack_id, size) AS stack_id, count(DISTINCT stack_id) AS stacks
FROM blocks_live_at($1, $2) GROUP BY site ORDER BY bytes DESC, site LIMIT $3;

-- name: snap_stack
SELECT stack FROM allocator_stacks s JOIN timeline_records t ON t.source_id = s.source_id
WHERE t.timeline_id = $1 AND s.stack_id = $2;

-- name: snap_ooms
SELECT event_index FROM allocator_events WHERE timeline_id = $1 AND action = 'oom'
ORDER BY event_index;

-- name: snap_oom_details
-- Each OOM as the ooms view gives it (largest_free_block / request_fits: fragmentation's,
-- for the request's stream and pool).
SELECT event_index, time_us, requested_bytes, device_free, stream, allocated_bytes,
       reserved_bytes, largest_free_block, request_fits, segment_bytes
FROM ooms WHERE timeline_id = $1 ORDER BY event_index;

-- name: snapshot_pools
-- The memory pools of a snapshot timeline (allocator_pools), the default pool first.
SELECT pool_id, kind, segments_end, reserved_end_bytes, allocated_end_bytes, owners
FROM allocator_pools WHERE timeline_id = ? ORDER BY kind <> 'default', pool_id;

-- name: snapshot_private_segments
-- How many segments of a snapshot timeline's end state are in a pool other than (0, 0).
SELECT count(*) FROM allocator_segments_end
WHERE timeline_id = ? AND CAST(segment_pool_id AS VARCHAR) <> '[0,0]';
