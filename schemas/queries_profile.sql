-- Named queries of the terminal UI's profiler screen (tlview.store.profile_queries).
-- Every value is a ? parameter. The window reads go to the events table directly, with
-- a lower bound on ts_ns (window start minus the longest event) that zone maps use, so
-- a scrub step on a 1 GB trace reads a few row groups; their figures are those of the
-- views in 40_profile_events.sql and 42_profile_steps.sql (measured, gpu_activity,
-- kernel_launches, measured_memory).

-- name: tui_trace_extent
-- Per device, stream and category: events, first start, last end, longest duration.
SELECT device, stream, category, count(*), min(ts_ns), max(ts_ns + dur_ns), max(dur_ns)
FROM events_kernel_measured WHERE timeline_id = ?
GROUP BY ALL;

-- name: tui_lane_busy
-- Busy nanoseconds per lane (device, stream), category and column over [$2, $4), columns
-- of $3 ns; $5: the longest GPU event. An event spanning columns counts in each, for the
-- part inside it; events of no duration count (n) without time.
WITH e AS (
    SELECT device, stream, category, greatest(ts_ns, $2) AS s, least(ts_ns + dur_ns, $4) AS en
    FROM events_kernel_measured
    WHERE timeline_id = $1
      AND category IN ('kernel', 'comm', 'memcpy', 'memset')
      AND ts_ns < $4 AND ts_ns >= $2 - $5 AND ts_ns + dur_ns >= $2
), one AS (
    SELECT device, stream, category, (s - $2) // $3 AS col, en - s AS ns FROM e
    WHERE (s - $2) // $3 = (greatest(en - 1, s) - $2) // $3
), many AS (
    SELECT device, stream, category, s, en,
           unnest(generate_series((s - $2) // $3, (en - 1 - $2) // $3)) AS col
    FROM e WHERE (s - $2) // $3 <> (greatest(en - 1, s) - $2) // $3
)
SELECT device, stream, category, col, sum(ns), count(*) FROM (
    SELECT * FROM one
    UNION ALL
    SELECT device, stream, category, col,
           least(en, $2 + (col + 1) * $3) - greatest(s, $2 + col * $3) FROM many
) GROUP BY ALL;

-- name: tui_kernel_at
-- The GPU event of a stream running at $4, else the first one starting in [$4, $5).
SELECT seq, name, category, device, stream, ts_ns, dur_ns, correlation FROM events_kernel_measured
WHERE timeline_id = $1 AND device IS NOT DISTINCT FROM $2
  AND stream = $3 AND category IN ('kernel', 'comm', 'memcpy', 'memset')
  AND ts_ns < $5 AND ts_ns >= $4 - $6 AND ts_ns + dur_ns > $4
ORDER BY ts_ns > $4, ts_ns, seq LIMIT 1;

-- name: tui_next_kernel
-- The next GPU event of a stream after ($4, $5) in (ts_ns, seq) order, within $6 ns.
SELECT seq, name, category, device, stream, ts_ns, dur_ns, correlation FROM events_kernel_measured
WHERE timeline_id = $1 AND device IS NOT DISTINCT FROM $2
  AND stream = $3 AND category IN ('kernel', 'comm', 'memcpy', 'memset')
  AND ts_ns >= $4 AND ts_ns <= $4 + $6 AND (ts_ns > $4 OR seq > $5)
ORDER BY ts_ns, seq LIMIT 1;

-- name: tui_prev_kernel
SELECT seq, name, category, device, stream, ts_ns, dur_ns, correlation FROM events_kernel_measured
WHERE timeline_id = $1 AND device IS NOT DISTINCT FROM $2
  AND stream = $3 AND category IN ('kernel', 'comm', 'memcpy', 'memset')
  AND ts_ns <= $4 AND ts_ns >= $4 - $6 AND (ts_ns < $4 OR seq < $5)
ORDER BY ts_ns DESC, seq DESC LIMIT 1;

-- name: tui_launching_runtime
-- The runtime call with the GPU event's correlation id, and its External id (as `measured`).
SELECT name, ts_ns, stream,
       TRY_CAST(json_extract(attrs, '$.args."External id"') AS BIGINT) AS ext
FROM events_kernel_measured
WHERE timeline_id = ? AND category = 'runtime' AND correlation = ?
ORDER BY seq LIMIT 1;

-- name: tui_cpu_op_of
-- The CPU op with External id $2 (as kernel_launches joins it), started in [$3, $4];
-- the innermost (latest started) where several carry it.
SELECT name, seq FROM events_kernel_measured
WHERE timeline_id = $1 AND category IN ('cpu_op', 'comm_call')
  AND ts_ns >= $3 AND ts_ns <= $4
  AND TRY_CAST(json_extract(attrs, '$.args."External id"') AS BIGINT) = $2
ORDER BY ts_ns DESC, seq DESC LIMIT 1;

-- name: tui_trace_attachments
SELECT a.seq, a.graph_timeline_id, t.name, a.step, a.node, a.method, a.confidence, a.candidates
FROM kernel_attachments a JOIN timeline_records t ON t.timeline_id = a.graph_timeline_id
WHERE a.timeline_id = ?
ORDER BY a.seq, a.graph_timeline_id;

-- name: tui_step_totals
-- step_totals (42_profile_steps.sql) of one trace, with each step's CPU start, one row per
-- ProfilerStep event (a trace that repeats a step name keeps its steps apart).
WITH p AS (SELECT * FROM profiler_steps WHERE timeline_id = $1),
l AS (
    SELECT l.*, p.seq AS p_seq
    FROM (SELECT * FROM kernel_launches WHERE timeline_id = $1) l ASOF JOIN p
      ON p.timeline_id = l.timeline_id AND l.launch_ts_ns >= p.ts_ns
    WHERE l.launch_ts_ns < p.end_ns
)
SELECT p.step, p.name, p.ts_ns, p.dur_ns, count(l.seq),
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'kernel'), 0) AS BIGINT),
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'comm'), 0) AS BIGINT),
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'memcpy'), 0) AS BIGINT),
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'memset'), 0) AS BIGINT),
       min(l.ts_ns), max(l.ts_ns + l.dur_ns)
FROM p LEFT JOIN l ON l.p_seq = p.seq
GROUP BY p.seq, p.step, p.name, p.ts_ns, p.dur_ns
ORDER BY p.ts_ns, p.seq;

-- name: tui_overlap_summary
SELECT device, n_comm_kernels, comm_ns, overlapped_ns, exposed_ns, overlap_pct
FROM comm_overlap_summary WHERE timeline_id = ? ORDER BY device;

-- name: tui_comm_overlap
SELECT seq, overlapped_ns, exposed_ns, overlap_pct, op, bytes
FROM comm_overlap WHERE timeline_id = ?;

-- name: tui_measured_peak
SELECT peak_allocated, peak_ts_ns, peak_reserved FROM measured_peak_memory
WHERE timeline_id = ? AND device IS NOT DISTINCT FROM ?;

-- name: tui_memory_columns
-- Per column of $4 ns from $3 (to $5): the highest allocator total, and the total after
-- the column's last event (by time, then file order).
SELECT (ts_ns - $3) // $4 AS col, max(total_allocated),
       arg_max(total_allocated, {'t': ts_ns, 's': seq})
FROM measured_memory
WHERE timeline_id = $1 AND device IS NOT DISTINCT FROM $2 AND ts_ns >= $3 AND ts_ns < $5
GROUP BY col;

-- name: tui_memory_before
-- The allocator's total after its last event in [$3, $4].
SELECT total_allocated FROM measured_memory
WHERE timeline_id = $1 AND device IS NOT DISTINCT FROM $2 AND ts_ns >= $3 AND ts_ns <= $4
ORDER BY ts_ns DESC, seq DESC LIMIT 1;

-- name: tui_search_kernel
-- The first GPU event whose name contains $2 (case-insensitive) after ($3, $4), wrapping.
SELECT seq, name, category, device, stream, ts_ns, dur_ns, correlation FROM events_kernel_measured
WHERE timeline_id = $1
  AND category IN ('kernel', 'comm', 'memcpy', 'memset')
  AND contains(lower(name), lower($2))
ORDER BY (ts_ns, seq) <= ($3, $4), ts_ns, seq LIMIT 1;

-- name: tui_kernel_by_seq
SELECT seq, name, category, device, stream, ts_ns, dur_ns, correlation FROM events_kernel_measured
WHERE timeline_id = ? AND seq = ?;

-- name: tui_kernels_by_seq
SELECT seq, name, category, device, stream, ts_ns, dur_ns, correlation FROM events_kernel_measured
WHERE timeline_id = ? AND list_contains(?, seq)
ORDER BY ts_ns, seq;
