-- Core views: the public interface shared by the TUI and by users' SQL.
-- Every figure tlview prints is derived here from the events table.

-- _timelines_labelled: the derivation of timelines (below), with the labels its titles
-- are made of (_timeline_labels' subject, form, label and rank) and graph_form (a
-- compiled graph's form: its output code, scheduler IR or FX graph), for the views that
-- group by them (graphs, runs), which would otherwise derive the labels again.
CREATE OR REPLACE VIEW _timelines_labelled AS
WITH n AS (
    SELECT timeline_id, any_value(attrs) AS notes FROM timeline_notes GROUP BY timeline_id
), st AS (
    SELECT timeline_id, count(*) AS n_steps FROM events_node_scheduled GROUP BY timeline_id
), t AS (
    SELECT t.timeline_id, t.name, t.format, s.path AS source_path,
           COALESCE(t.device, json_extract_string(n.notes, '$.device')) AS device,
           COALESCE(st.n_steps, 0) AS n_steps, t.source_id, t.attrs, n.notes
    FROM timeline_records t JOIN sources s USING (source_id)
    LEFT JOIN n USING (timeline_id) LEFT JOIN st USING (timeline_id)
), l AS (
    SELECT t.*, l.run_id, l.run_name, l.subject, l.form, l.label, l.source_kind, l.rank,
           l.run_name || ' · ' || l.subject || ' · ' || l.label AS words0,
           t.format IN ('inductor_wrapper', 'aot_fx_graph', 'inductor_ir') AS graph_form
    FROM t LEFT JOIN _timeline_labels l USING (timeline_id)
), w AS (  -- the same words on several devices: the device said
    SELECT *, words0 || CASE WHEN min(COALESCE(device, '')) OVER (PARTITION BY words0)
                                  <> max(COALESCE(device, '')) OVER (PARTITION BY words0)
                             THEN ' · ' || COALESCE(device, 'no device') ELSE '' END AS words
    FROM l
)
SELECT timeline_id, name, format, source_path, device, n_steps, source_id, attrs, notes,
       run_id, run_name,
       words || CASE WHEN row_number() OVER (PARTITION BY words ORDER BY timeline_id) > 1
                     THEN ' #' || row_number() OVER (PARTITION BY words ORDER BY timeline_id)
                     ELSE '' END AS title,
       CASE WHEN graph_form THEN nullif(first_value(timeline_id) OVER (
                PARTITION BY graph_form, run_id, form, subject, device, n_steps
                ORDER BY source_kind NOT IN ('output_code.py', 'scheduler IR'), timeline_id),
                timeline_id) END AS copy_of,
       source_kind, subject, form, label, rank, graph_form
FROM w;

-- timelines: one row per timeline, with where it came from and its length.
--   timeline_id, name (as its ingester named it), format, source_path, device, n_steps
--   (number of schedule steps), source_id, attrs (ingester facts), notes (facts learned
--   at the end of the ingest);
--   run_id, run_name: its run (05_runs.sql); title: unique in the database and saying
--   where it comes from, `run · subject · form` (`compiled_train · 0_forward · output
--   code`, `gpu_step · 0_forward · output code in TORCH_TRACE`), with ` · cuda:1` where
--   the same words name timelines of several devices, and ` #2`, ` #3` after the first
--   where they still name several (by timeline id);
--   copy_of: for a compiled graph's timeline that repeats another of the same run (the
--   same graph, form, device and steps: its output_code.py, its copy in a torch log and
--   in a TORCH_TRACE log), the one it repeats: the graph is listed once, through that
--   one (the artifact's own file first: output_code.py, the scheduler IR; then the
--   first ingested), and counted once wherever tlview sums; NULL otherwise;
--   source_kind: the artifact it was read from (_source_kinds).
CREATE OR REPLACE VIEW timelines AS
SELECT timeline_id, name, format, source_path, device, n_steps, source_id, attrs, notes,
       run_id, run_name, title, copy_of, source_kind
FROM _timelines_labelled
ORDER BY timeline_id;

-- nodes: the schedule. One row per scheduled node; step is its position (0-based).
--   node_class: SchedulerNode, FusedSchedulerNode, ExternKernelSchedulerNode, HLO opcode...
--   ir_type: the IR node type (ComputedBuffer, FallbackKernel, _CollectiveKernel...)
--   reads/writes: buffer names from its dependencies; attrs: everything else kept.
CREATE OR REPLACE VIEW nodes AS
SELECT timeline_id, step, node, node_class, ir_type, kernel, device, reads, writes,
       line, attrs
FROM events_node_scheduled;

-- _frees: the last live step of each buffer (the latest, if several were recorded).
CREATE OR REPLACE VIEW _frees AS
SELECT timeline_id, buffer, max(step) AS last_step, arg_max(reason, step) AS free_reason
FROM events_buffer_freed GROUP BY timeline_id, buffer;

-- _buffers_derived: the buffers view computed from events (cached in _cache_buffers).
CREATE OR REPLACE VIEW _buffers_derived AS
SELECT a.timeline_id, a.buffer, a.bytes, a.step AS alloc_step, f.last_step,
       a.dtype, a.shape, a.stride, a.layout, a.device, a.node AS producer,
       COALESCE(a.is_input, false) AS is_input, a.size_expr, a.allocation, a."offset",
       f.free_reason, a.line, a.attrs
FROM events_buffer_allocated a LEFT JOIN _frees f USING (timeline_id, buffer);

-- buffers: one row per buffer, with its life.
--   bytes: storage bytes (NULL = unknown/symbolic, see size_expr);
--   alloc_step: step of the node that produced it (NULL for graph inputs);
--   last_step: last step at which it is live (it is freed after that step);
--   is_input: graph inputs and parameters of the caller, never counted in graph memory;
--   allocation, offset: placement inside a shared allocation (XLA), else NULL.
CREATE OR REPLACE VIEW buffers AS
SELECT * FROM _cache_buffers;

-- _counted: buffers that occupy graph memory over a known interval.
CREATE OR REPLACE VIEW _counted AS
SELECT * FROM buffers
WHERE NOT is_input AND alloc_step IS NOT NULL AND last_step IS NOT NULL;

-- _segments: for buffers placed in a shared allocation, the elementary byte
-- ranges between consecutive value boundaries, each with the live intervals of
-- the values covering it. Overlapping values are therefore never counted twice.
CREATE OR REPLACE VIEW _segments AS
WITH bounds AS (
    SELECT DISTINCT timeline_id, allocation, b FROM (
        SELECT timeline_id, allocation, "offset" AS b FROM _counted
        WHERE allocation IS NOT NULL AND bytes > 0
        UNION ALL
        SELECT timeline_id, allocation, "offset" + bytes FROM _counted
        WHERE allocation IS NOT NULL AND bytes > 0)
), seg AS (
    SELECT timeline_id, allocation, b AS lo,
           lead(b) OVER (PARTITION BY timeline_id, allocation ORDER BY b) AS hi
    FROM bounds
)
SELECT s.timeline_id, s.allocation, s.lo, s.hi, c.alloc_step, c.last_step
FROM seg s JOIN _counted c
  ON c.timeline_id = s.timeline_id AND c.allocation = s.allocation
 AND c."offset" <= s.lo AND c."offset" + c.bytes >= s.hi
WHERE s.hi IS NOT NULL;

-- _memory_deltas: +bytes where memory becomes live, -bytes after its last step.
CREATE OR REPLACE VIEW _memory_deltas AS
-- per buffer: live bytes change at alloc_step and after last_step (buffers in a shared
-- allocation contribute through their segments below); alloc/freed bytes are nominal.
SELECT timeline_id, alloc_step AS step,
       CASE WHEN allocation IS NULL THEN COALESCE(bytes, 0) ELSE 0 END AS delta,
       CASE WHEN bytes IS NULL THEN 1 ELSE 0 END AS unknown_delta,
       COALESCE(bytes, 0) AS alloc_bytes, 0 AS freed_bytes
FROM _counted
UNION ALL
SELECT timeline_id, last_step + 1,
       CASE WHEN allocation IS NULL THEN -COALESCE(bytes, 0) ELSE 0 END,
       CASE WHEN bytes IS NULL THEN -1 ELSE 0 END, 0, 0
FROM _counted
UNION ALL
SELECT timeline_id, last_step, 0, 0, 0, COALESCE(bytes, 0) FROM _counted
UNION ALL
-- shared allocations: merge each segment's covering intervals into islands
SELECT timeline_id, step, delta, 0, 0, 0 FROM (
    WITH ordered AS (
        SELECT *, max(last_step) OVER (
                   PARTITION BY timeline_id, allocation, lo ORDER BY alloc_step, last_step
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
        FROM _segments
    ), islands AS (
        SELECT *, sum(CASE WHEN prev_end IS NULL OR alloc_step > prev_end + 1 THEN 1 ELSE 0 END)
                  OVER (PARTITION BY timeline_id, allocation, lo ORDER BY alloc_step, last_step
                        ROWS UNBOUNDED PRECEDING) AS island
        FROM ordered
    ), merged AS (
        SELECT timeline_id, allocation, lo, hi, min(alloc_step) AS s, max(last_step) AS e
        FROM islands GROUP BY timeline_id, allocation, lo, hi, island
    )
    SELECT timeline_id, s AS step, hi - lo AS delta FROM merged
    UNION ALL
    SELECT timeline_id, e + 1, lo - hi FROM merged
);

-- _memory_curve_derived: memory_curve computed from buffers (cached in _cache_memory_curve).
CREATE OR REPLACE VIEW _memory_curve_derived AS
WITH d AS (
    SELECT timeline_id, step, sum(delta) AS delta, sum(unknown_delta) AS unknown_delta,
           sum(alloc_bytes) AS alloc_bytes, sum(freed_bytes) AS freed_bytes
    FROM _memory_deltas GROUP BY timeline_id, step
)
SELECT n.timeline_id, n.step, n.node,
       CAST(sum(COALESCE(d.delta, 0)) OVER w AS BIGINT) AS live_bytes,
       CAST(COALESCE(d.alloc_bytes, 0) AS BIGINT) AS alloc_bytes,
       CAST(COALESCE(d.freed_bytes, 0) AS BIGINT) AS freed_bytes,
       CAST(sum(COALESCE(d.unknown_delta, 0)) OVER w AS BIGINT) AS unknown_live
FROM nodes n
LEFT JOIN d USING (timeline_id, step)
WINDOW w AS (PARTITION BY n.timeline_id ORDER BY n.step ROWS UNBOUNDED PRECEDING);

-- memory_curve: graph memory live at every step.
--   live_bytes: bytes of buffers live at the step (alloc_step <= step <= last_step),
--     inputs excluded, shared allocations counted by the union of their live ranges;
--   alloc_bytes / freed_bytes: bytes of buffers allocated at / last live at this step;
--   unknown_live: live buffers of unknown (symbolic) size, which live_bytes leaves out.
CREATE OR REPLACE VIEW memory_curve AS
SELECT * FROM _cache_memory_curve;

-- _peak_derived: the first step reaching the maximum of memory_curve (cached in _cache_peak).
CREATE OR REPLACE VIEW _peak_derived AS
SELECT timeline_id, step AS peak_step, live_bytes AS peak_bytes, node
FROM memory_curve
QUALIFY row_number() OVER (PARTITION BY timeline_id ORDER BY live_bytes DESC, step) = 1;

-- peak_memory: per timeline, the first step reaching the maximum of memory_curve.
CREATE OR REPLACE VIEW peak_memory AS
SELECT * FROM _cache_peak;

-- live_at(timeline_id, step): the buffers live at a step, largest first.
-- Same rule as memory_curve; graph inputs are not listed.
CREATE OR REPLACE MACRO live_at(tid, s) AS TABLE
SELECT timeline_id, buffer, bytes, dtype, shape, producer, alloc_step, last_step,
       alloc_step = s AS allocated_here, last_step = s AS freed_after_here,
       allocation, "offset", layout, size_expr
FROM _counted
WHERE timeline_id = tid AND alloc_step <= s AND s <= last_step
ORDER BY bytes DESC NULLS LAST, buffer;

-- collectives: each issued collective and the wait that completes it.
--   issue_step / wait_step: schedule steps; steps_between: compute that can hide it;
--   bytes: the largest buffer it touches (the unsharded message).
CREATE OR REPLACE VIEW collectives AS
SELECT i.timeline_id, i.node, i.op, i.step AS issue_step, w.node AS wait_node,
       w.step AS wait_step, i.bytes, w.step - i.step AS steps_between, i.buffers
FROM events_collective_issued i
LEFT JOIN events_collective_waited w ON w.timeline_id = i.timeline_id AND w.collective = i.node;
