-- Named queries of the terminal UI (tlview.store.timeline_queries).
-- Every value is a ? parameter; search text is compared with contains(), never pasted.
--
-- Memory figures read the core views (memory_curve, _counted), which the store keeps
-- cached per timeline, so a cursor step is a range read, never a recomputation.
-- Nothing is kept in the connection between reads (no TEMP tables): the UI closes the
-- file whenever it is idle, so that an ingest can write to it.

-- name: tui_timelines
SELECT timeline_id, name, format, device, n_steps, source_path, source_id, run_id,
       COALESCE(run_name, ''), COALESCE(title, ''), copy_of
FROM timelines ORDER BY timeline_id;

-- name: tui_peaks
SELECT timeline_id, peak_step, peak_bytes FROM peak_memory ORDER BY timeline_id;

-- name: tui_peak_of
-- The cached peak, where some buffer has a known life (else there is no peak to go to).
SELECT timeline_id, peak_step, peak_bytes FROM peak_memory p
WHERE timeline_id = $1 AND EXISTS (SELECT 1 FROM _counted c WHERE c.timeline_id = $1);

-- name: tui_data_version
-- What an ingest changes: polled (only after the file changed on disk) to show new timelines.
SELECT COALESCE((SELECT max(source_id) FROM sources), 0),
       (SELECT count(*) FROM timeline_records);

-- name: tui_has_node_times
-- Whether node_times can give a time: the view with its columns, and a measured kernel in
-- the database (without a profiler trace every time is NULL, and reading node_times would
-- cost its planning, ~0.7 CPU-s, on every timeline opened, for nothing).
SELECT count(DISTINCT column_name) = 3 AND EXISTS (SELECT 1 FROM events_kernel_measured)
FROM information_schema.columns
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

-- name: tui_curve_rows
SELECT step, node, live_bytes, alloc_bytes, freed_bytes, unknown_live
FROM memory_curve WHERE timeline_id = ? ORDER BY step;

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
-- LIMIT lets DuckDB keep a top-N heap, several times faster at many live buffers).
SELECT buffer, bytes, dtype, shape, producer, alloc_step, last_step, size_expr
FROM _counted WHERE timeline_id = $1 AND alloc_step <= $2 AND $2 <= last_step
ORDER BY bytes DESC NULLS LAST, buffer LIMIT 300;

-- name: tui_live_provenance
-- Every buffer live at a step with what it is grouped by (buffer_provenance), largest first.
SELECT buffer, bytes, dtype, shape, alloc_step, last_step, size_expr, producer, origin,
       source, alloc_site
FROM buffer_provenance WHERE timeline_id = $1 AND alloc_step <= $2 AND $2 <= last_step
ORDER BY bytes DESC NULLS LAST, buffer;

-- name: tui_step_rows
SELECT step, node, node_class, ir_type, kernel FROM nodes
WHERE timeline_id = ? AND step BETWEEN ? AND ? ORDER BY step;

-- name: tui_step_durations
SELECT step, total_ns FROM node_times
WHERE timeline_id = ? AND step BETWEEN ? AND ?;

-- name: tui_timeline_durations
SELECT step, total_ns FROM node_times WHERE timeline_id = ?;

-- name: tui_node_at
SELECT node, node_class, ir_type, kernel, device, reads, writes, line, attrs FROM nodes
WHERE timeline_id = ? AND step = ?;

-- name: tui_buffer_facts
-- Size and type of the buffers a node reads and writes (graph inputs included).
SELECT buffer, bytes, dtype, shape, is_input FROM events_buffer_allocated
WHERE timeline_id = ? AND list_contains(?, buffer);

-- name: tui_xla_instruction
SELECT operands, op_type, op_name, source, stack_frame_id, fusion_kind, calls
FROM xla_instructions WHERE timeline_id = ? AND step = ?;

-- name: tui_values_of
-- The values (buffers) the given instructions define, in instruction then index order.
SELECT buffer, bytes, dtype, shape, is_input FROM buffers
WHERE timeline_id = $1 AND list_contains($2, producer)
ORDER BY list_position($2, producer), buffer;

-- name: tui_collectives
SELECT node, op, bytes, issue_step, wait_node, wait_step FROM collectives
WHERE timeline_id = ? ORDER BY issue_step, node;

-- name: tui_nodes_between
-- The compute scheduled under a collective: the nodes strictly between issue and wait.
SELECT step, node, kernel FROM nodes
WHERE timeline_id = ? AND step > ? AND step < ? ORDER BY step LIMIT ?;

-- name: tui_search
-- First node, kernel or buffer whose name contains the text (case-insensitive), after
-- step $3, wrapping around to the start. Buffers are found at their allocation step.
WITH hits AS (
    SELECT step, 'node' AS what, node AS name FROM events_node_scheduled
    WHERE timeline_id = $1 AND contains(lower(node), lower($2))
    UNION ALL
    SELECT step, 'kernel', kernel FROM events_node_scheduled
    WHERE timeline_id = $1 AND contains(lower(kernel), lower($2))
    UNION ALL
    SELECT step, 'buffer', buffer FROM events_buffer_allocated
    WHERE timeline_id = $1 AND step IS NOT NULL
      AND contains(lower(buffer), lower($2))
)
SELECT step, what, name FROM hits
ORDER BY step <= $3, step, what, name LIMIT 1;

-- name: tui_node_kernels
-- The measured GPU events attached to a node (kernel_attachments), in time order; a
-- scheduler-IR node's are those of the output-code node it maps onto (ir_node_times); a
-- copy of a graph (the same output code ingested twice) has those of the one its times
-- come from (graph_copies).
WITH own AS (
    SELECT CAST($1 AS INTEGER) AS tid, CAST($2 AS BIGINT) AS step
    UNION ALL
    SELECT wrapper_timeline_id, wrapper_step FROM ir_node_times
    WHERE timeline_id = $1 AND step = $2 AND attach_method LIKE 'ir!_launch!_order+%' ESCAPE '!'
), target AS (
    SELECT tid, step FROM own
    UNION
    SELECT c.copy_of, o.step FROM own o JOIN graph_copies c ON c.timeline_id = o.tid
)
SELECT a.timeline_id, a.seq, a.kernel, e.ts_ns, a.dur_ns, a.method, a.confidence
FROM kernel_attachments a
JOIN target t ON a.graph_timeline_id = t.tid AND a.step = t.step
JOIN events_kernel_measured e ON e.timeline_id = a.timeline_id AND e.seq = a.seq
ORDER BY a.timeline_id, e.ts_ns, a.seq;

-- name: tui_quiet
SET enable_progress_bar = false;

-- name: tui_graph_sources
-- Every timeline of the compiled graph timeline $1 shows (graphs.forms): its output code
-- from each artifact that holds it (copies: copy_of), its scheduler IR, its FX graph, in
-- timeline order; none when $1 is no compiled graph's.
SELECT f.timeline_id, f.label, f.form, f.source_kind, f.copy_of
FROM (SELECT unnest(forms) AS f FROM graphs
      WHERE list_contains(list_transform(forms, lambda x: x.timeline_id), $1))
ORDER BY f.timeline_id;

-- name: timeline_warnings
SELECT unnest(from_json(json_extract(attrs, '$.warnings'), '["VARCHAR"]'))
FROM timeline_notes
WHERE timeline_id = ? AND json_extract(attrs, '$.warnings') IS NOT NULL;
