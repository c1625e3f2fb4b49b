-- Named queries of the terminal UI (tlview.store.timeline_queries).
-- Every value is a ? parameter; search text is compared with contains(), never pasted.
--
-- Memory figures read the core views (memory_curve, _counted), which the store keeps
-- cached per timeline, so a cursor step is a range read, never a recomputation.
-- _tui_collectives is a TEMP copy of the collectives view for the timelines shown.

-- name: tui_timelines
SELECT timeline_id, name, format, device, n_steps, source_path
FROM timelines ORDER BY timeline_id;

-- name: tui_peaks
SELECT timeline_id, peak_step, peak_bytes FROM peak_memory ORDER BY timeline_id;

-- name: tui_has_node_times
SELECT count(DISTINCT column_name) = 3 FROM information_schema.columns
WHERE table_name = 'node_times' AND column_name IN ('timeline_id', 'step', 'total_ns');

-- name: tui_curve_stats
-- The first step reaching the maximum, as peak_memory defines it; and whether any
-- buffer has a known lifetime at all (without one there is no liveness to show).
SELECT (SELECT step FROM memory_curve WHERE timeline_id = $1
        ORDER BY live_bytes DESC, step LIMIT 1) AS peak_step,
       (SELECT max(live_bytes) FROM memory_curve WHERE timeline_id = $1) AS peak_bytes,
       (SELECT count(*) FROM _counted WHERE timeline_id = $1) AS n_counted,
       (SELECT count(*) FROM memory_curve WHERE timeline_id = $1) AS n_steps;

-- name: tui_curve_buckets
-- The curve squeezed into $2 columns: the largest live_bytes of the steps in each column.
SELECT CAST(floor(step * $2 / $3) AS BIGINT) AS col, max(live_bytes), max(unknown_live)
FROM memory_curve WHERE timeline_id = $1
GROUP BY col ORDER BY col;

-- name: tui_curve_at
SELECT live_bytes, alloc_bytes, freed_bytes, unknown_live
FROM memory_curve WHERE timeline_id = ? AND step = ?;

-- name: tui_curve_window
SELECT step, alloc_bytes, freed_bytes FROM memory_curve
WHERE timeline_id = ? AND step BETWEEN ? AND ?;

-- name: tui_live_totals
SELECT count(*), count(*) FILTER (WHERE bytes IS NULL)
FROM _counted WHERE timeline_id = $1 AND alloc_step <= $2 AND $2 <= last_step;

-- name: tui_live_top
-- live_at(timeline, step), largest first, from the cache: the first 300 (a literal
-- LIMIT lets DuckDB keep a top-N heap: 18 ms instead of 66 ms at 25,000 live buffers).
SELECT buffer, bytes, dtype, shape, producer, alloc_step, last_step, size_expr
FROM _counted WHERE timeline_id = $1 AND alloc_step <= $2 AND $2 <= last_step
ORDER BY bytes DESC NULLS LAST, buffer LIMIT 300;

-- name: tui_step_rows
SELECT step, node, node_class, ir_type, kernel FROM nodes
WHERE timeline_id = ? AND step BETWEEN ? AND ? ORDER BY step;

-- name: tui_step_durations
SELECT step, total_ns FROM node_times
WHERE timeline_id = ? AND step BETWEEN ? AND ?;

-- name: tui_node_at
SELECT node, node_class, ir_type, kernel, device, reads, writes, line, attrs FROM nodes
WHERE timeline_id = ? AND step = ?;

-- name: tui_buffer_facts
-- Size and type of the buffers a node reads and writes (graph inputs included).
SELECT buffer, bytes, dtype, shape, is_input FROM events
WHERE kind = 'buffer_allocated' AND timeline_id = ? AND list_contains(?, buffer);

-- name: tui_create_collectives_cache
-- The collectives view of the timelines shown, copied once (the view joins the events
-- table with itself: 100 ms a step on a million steps, 1 ms from the copy).
CREATE TEMP TABLE IF NOT EXISTS _tui_collectives (
    timeline_id INTEGER, node VARCHAR, op VARCHAR, bytes BIGINT, issue_step BIGINT,
    wait_node VARCHAR, wait_step BIGINT);

-- name: tui_create_collectives_prepared
CREATE TEMP TABLE IF NOT EXISTS _tui_collectives_prepared (timeline_id INTEGER PRIMARY KEY);

-- name: tui_collectives_prepared
SELECT count(*) FROM _tui_collectives_prepared WHERE timeline_id = ?;

-- name: tui_fill_collectives_cache
INSERT INTO _tui_collectives
SELECT timeline_id, node, op, bytes, issue_step, wait_node, wait_step FROM collectives
WHERE timeline_id = ? ORDER BY issue_step;

-- name: tui_mark_collectives_prepared
INSERT OR IGNORE INTO _tui_collectives_prepared VALUES (?);

-- name: tui_collectives_at
-- Collectives in flight at a step: issued at or before it, waited after it (or never).
SELECT node, op, bytes, issue_step, wait_node, wait_step FROM _tui_collectives
WHERE timeline_id = $1 AND issue_step <= $2 AND ($2 < wait_step OR wait_step IS NULL)
ORDER BY issue_step, node;

-- name: tui_nodes_between
-- The compute scheduled under a collective: the nodes strictly between issue and wait.
SELECT step, node, kernel FROM nodes
WHERE timeline_id = ? AND step > ? AND step < ? ORDER BY step LIMIT ?;

-- name: tui_next_collective
SELECT min(issue_step) FROM _tui_collectives WHERE timeline_id = ? AND issue_step > ?;

-- name: tui_prev_collective
SELECT max(issue_step) FROM _tui_collectives WHERE timeline_id = ? AND issue_step < ?;

-- name: tui_search
-- First node, kernel or buffer whose name contains the text (case-insensitive), after
-- step $3, wrapping around to the start. Buffers are found at their allocation step.
WITH hits AS (
    SELECT step, 'node' AS what, node AS name FROM events
    WHERE kind = 'node_scheduled' AND timeline_id = $1 AND contains(lower(node), lower($2))
    UNION ALL
    SELECT step, 'kernel', kernel FROM events
    WHERE kind = 'node_scheduled' AND timeline_id = $1 AND contains(lower(kernel), lower($2))
    UNION ALL
    SELECT step, 'buffer', buffer FROM events
    WHERE kind = 'buffer_allocated' AND timeline_id = $1 AND step IS NOT NULL
      AND contains(lower(buffer), lower($2))
)
SELECT step, what, name FROM hits
ORDER BY step <= $3, step, what, name LIMIT 1;

-- name: tui_quiet
SET enable_progress_bar = false;
