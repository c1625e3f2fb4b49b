-- Views over TORCH_TRACE logs (ingest/torch_trace.py, format torch_trace) and the
-- compiler's estimates beside what a profiler measured.
--
-- A TORCH_TRACE log gives wrapper and FX timelines (the views of 30_wrapper.sql apply)
-- and, as events of kind 'compile_event', what is no schedule step: the compile phases
-- torch timed (category 'chromium'), compilation metrics ('metrics'), Inductor's
-- estimated runtime of each scheduler node ('estimate', on the wrapper timeline of its
-- graph), provenance ('provenance'), interned strings ('string') and every other record
-- of the log ('envelope', its kind in name; attrs.unknown_kind for kinds tlview does
-- not know, kept with their payload).

-- compile_events: every compile_event, with its compile and rank.
--   compile_id: torch's trace id ('0/0', '0/0_1' for attempt 1, '!3/0/0' under compiled
--   autograd), from the record or else from the timeline it is on; rank: the log's.
--   ts_ns: chromium events' time (the log's microseconds x 1000, exactly);
--   dur_ns: for an estimate, the estimated runtime in ns (see inductor_estimates).
CREATE OR REPLACE VIEW compile_events AS
SELECT e.timeline_id, e.seq, e.category, e.name, e.step, e.node, e.kernel, e.ts_ns,
       e.dur_ns,
       COALESCE(json_extract_string(e.attrs, '$.compile_id'),
                json_extract_string(t.attrs, '$.compile_id')) AS compile_id,
       TRY_CAST(json_extract(t.attrs, '$.rank') AS INTEGER) AS rank, e.line, e.attrs
FROM events_compile_event e JOIN timeline_records t USING (timeline_id);

-- compile_phases: each phase of a compile that torch timed (dynamo, aot_trace_joint_graph,
-- inductor_compile, code_gen, ...), from its chromium begin ('B') and end ('E') events.
--   A begin pairs with the end of the same name, compile id and thread at the same
--   nesting depth of that name: the k-th begin at a depth with the k-th end back to it.
--   start_ns / end_ns / dur_ns; end_ns NULL when the log holds no end (a crash).
CREATE OR REPLACE VIEW compile_phases AS
WITH ev AS (
    SELECT timeline_id, seq, rank, compile_id, name, ts_ns,
           json_extract_string(attrs, '$.ph') AS ph, json_extract(attrs, '$.tid') AS tid,
           json_extract_string(attrs, '$.cat') AS cat
    FROM compile_events
    WHERE category = 'chromium' AND json_extract_string(attrs, '$.ph') IN ('B', 'E')
), d AS (
    SELECT *, sum(CASE ph WHEN 'B' THEN 1 ELSE -1 END)
                  OVER (PARTITION BY timeline_id, compile_id, name, tid ORDER BY ts_ns, seq
                        ROWS UNBOUNDED PRECEDING)
              + CASE ph WHEN 'E' THEN 1 ELSE 0 END AS depth
    FROM ev
), k AS (
    SELECT *, row_number() OVER (PARTITION BY timeline_id, compile_id, name, tid, depth, ph
                                 ORDER BY ts_ns, seq) AS k
    FROM d
)
SELECT b.timeline_id, b.rank, b.compile_id, b.name AS phase, b.cat, b.depth,
       b.ts_ns AS start_ns, e.ts_ns AS end_ns, e.ts_ns - b.ts_ns AS dur_ns
FROM k b
LEFT JOIN k e
  ON e.ph = 'E' AND e.timeline_id = b.timeline_id AND e.compile_id IS NOT DISTINCT FROM
     b.compile_id AND e.name = b.name AND e.tid IS NOT DISTINCT FROM b.tid
 AND e.depth = b.depth AND e.k = b.k
WHERE b.ph = 'B';

-- compilation_metrics: torch's own account of each compile (compilation_metrics,
-- bwd_compilation_metrics, ...: kind), a few of its fields as columns, all in metrics.
--   times in seconds as torch states them; fail_type / fail_reason where it failed.
CREATE OR REPLACE VIEW compilation_metrics AS
SELECT timeline_id, rank, compile_id, name AS kind,
       json_extract_string(attrs, '$.metrics.co_name') AS co_name,
       json_extract_string(attrs, '$.metrics.co_filename') AS co_filename,
       TRY_CAST(json_extract(attrs, '$.metrics.entire_frame_compile_time_s') AS DOUBLE)
           AS entire_frame_compile_time_s,
       TRY_CAST(json_extract(attrs, '$.metrics.backend_compile_time_s') AS DOUBLE)
           AS backend_compile_time_s,
       TRY_CAST(json_extract(attrs, '$.metrics.inductor_compile_time_s') AS DOUBLE)
           AS inductor_compile_time_s,
       TRY_CAST(json_extract(attrs, '$.metrics.code_gen_time_s') AS DOUBLE) AS code_gen_time_s,
       TRY_CAST(json_extract(attrs, '$.metrics.graph_op_count') AS BIGINT) AS graph_op_count,
       TRY_CAST(json_extract(attrs, '$.metrics.guard_count') AS BIGINT) AS guard_count,
       json_extract_string(attrs, '$.metrics.fail_type') AS fail_type,
       json_extract_string(attrs, '$.metrics.fail_reason') AS fail_reason,
       json_extract(attrs, '$.metrics') AS metrics
FROM compile_events WHERE category = 'metrics';

-- inductor_estimates: Inductor's estimate of each scheduler node's runtime
-- (inductor_runtime_and_tensor_meta, logged with LOG_TLPARSE=1), on its graph's wrapper.
--   timeline_id: the wrapper timeline; entry: the node's place in Inductor's schedule;
--   name: the scheduler node ('op3_op4') or extern kernel ('extern_kernels.mm'), NULL
--   for a MultiOutput; kind: fused | extern | none; step / kernel: the launch it was
--   aligned to (docs/profiles.md: extern entries by name and order, fused ones in order between
--   them; NULL where the orders disagree), align: how;
--   estimated_ns: the estimate in ns (torch logs it in ms, in a field named _ns);
--   outputs: dtype, shape and stride of each output.
CREATE OR REPLACE VIEW inductor_estimates AS
SELECT timeline_id, TRY_CAST(json_extract(attrs, '$.index') AS INTEGER) AS entry, name,
       json_extract_string(attrs, '$.kind') AS kind, json_extract_string(attrs, '$.type')
           AS op_type,
       step, kernel, dur_ns AS estimated_ns, json_extract_string(attrs, '$.align') AS align,
       json_extract(attrs, '$.outputs') AS outputs, compile_id, rank
FROM compile_events WHERE category = 'estimate';

-- estimate_vs_measured: Inductor's estimated runtime beside the measured one, per
-- compiled node (level 'node') and per graph (level 'graph', step NULL), for each trace
-- attached to the graph (node_times; a copy of a graph shows its graph's times).
--   estimated_ns: the estimate (graph: sum over its entries, aligned or not);
--   measured_ns: the node's measured time per call (total_ns / invocations; graph:
--   sum over its launch nodes, so the measured time of one call);
--   ratio = measured_ns / estimated_ns (NULL when the estimate is 0);
--   miss_ns = measured_ns - estimated_ns; miss_rank: 1 for the node whose |miss_ns| is
--   the largest in its graph and trace (ORDER BY miss_rank: the largest misses first).
--   Nodes without an estimate aligned to them (none, or its stretch unaligned) are not
--   listed at node level; unaligned entries are in inductor_estimates (step NULL).
CREATE OR REPLACE VIEW estimate_vs_measured AS
WITH n AS (
    SELECT e.timeline_id, json_extract_string(t.attrs, '$.aot_id') AS aot_id, e.step,
           e.name AS node, o.kernel, o.kind, e.estimated_ns, o.measured_timeline_id,
           o.invocations, o.mean_ns AS measured_ns, o.attach_method, o.confidence
    FROM inductor_estimates e
    JOIN timeline_records t ON t.timeline_id = e.timeline_id
    JOIN output_node_times o ON o.timeline_id = e.timeline_id AND o.step = e.step
    WHERE o.measured_timeline_id IS NOT NULL
), g AS (
    SELECT o.timeline_id, o.measured_timeline_id, max(o.invocations) AS invocations,
           CAST(sum(o.mean_ns) AS BIGINT) AS measured_ns
    FROM output_node_times o
    WHERE o.measured_timeline_id IS NOT NULL AND o.kind IS NOT NULL
      AND o.timeline_id IN (SELECT timeline_id FROM inductor_estimates)
    GROUP BY ALL
), ge AS (
    SELECT timeline_id, CAST(sum(estimated_ns) AS BIGINT) AS estimated_ns
    FROM inductor_estimates GROUP BY ALL
)
SELECT 'node' AS level, timeline_id, aot_id, measured_timeline_id, step, node, kernel, kind,
       estimated_ns, measured_ns, invocations,
       round(measured_ns / nullif(estimated_ns, 0), 3) AS ratio,
       measured_ns - estimated_ns AS miss_ns,
       row_number() OVER (PARTITION BY timeline_id, measured_timeline_id
                          ORDER BY abs(measured_ns - estimated_ns) DESC NULLS LAST, step)
           AS miss_rank,
       attach_method, confidence
FROM n
UNION ALL
SELECT 'graph', g.timeline_id, json_extract_string(t.attrs, '$.aot_id'),
       g.measured_timeline_id, NULL, NULL, NULL, NULL, ge.estimated_ns, g.measured_ns,
       g.invocations, round(g.measured_ns / nullif(ge.estimated_ns, 0), 3),
       g.measured_ns - ge.estimated_ns, NULL, NULL, NULL
FROM g JOIN ge USING (timeline_id) JOIN timeline_records t ON t.timeline_id = g.timeline_id;

-- call_memory: per compiled call of a trace, the memory its graph's run took, from the
-- profiler's [memory] events of the graph's device (profile_memory=True):
--   base_bytes: the allocator's total allocated just before the call;
--   peak_bytes: the largest total allocated during the call; call_peak_bytes: their
--   difference, what the call allocated at most beyond what it was given (comparable
--   to a wrapper timeline's peak, which leaves the graph's inputs out).
CREATE OR REPLACE VIEW call_memory AS
WITH calls AS (
    SELECT DISTINCT c.timeline_id, c.call_seq, c.ts_ns, c.end_ns, og.device
    FROM _compiled_calls c
    JOIN call_graphs g USING (timeline_id, call_seq)
    JOIN _output_graphs og ON og.timeline_id = g.graph_timeline_id
), base AS (
    SELECT c.timeline_id, c.call_seq, m.total_allocated AS base_bytes
    FROM calls c ASOF LEFT JOIN measured_memory m
      ON m.timeline_id = c.timeline_id AND m.device = c.device AND c.ts_ns > m.ts_ns
), peak AS (
    SELECT c.timeline_id, c.call_seq, max(m.total_allocated) AS peak_bytes,
           count(m.seq) AS memory_events
    FROM calls c LEFT JOIN measured_memory m
      ON m.timeline_id = c.timeline_id AND m.device = c.device
     AND m.ts_ns >= c.ts_ns AND m.ts_ns < c.end_ns
    GROUP BY ALL
)
SELECT c.timeline_id, c.call_seq, c.device, p.memory_events, b.base_bytes, p.peak_bytes,
       greatest(COALESCE(p.peak_bytes, 0) - COALESCE(b.base_bytes, 0), 0) AS call_peak_bytes
FROM calls c JOIN base b USING (timeline_id, call_seq) JOIN peak p USING (timeline_id, call_seq);

-- memory_estimate_vs_measured: per graph (wrapper timeline) and trace, the planned
-- peaks beside the measured one.
--   ir_peak_bytes: the post-fusion scheduler IR's peak (ir_vs_wrapper_peak, ir_stage
--   post_fusion or unnamed: the schedule the output code was generated from), of this
--   graph or of a copy of it (copies agree; the largest where they do not);
--   ir_pre_fusion_peak_bytes: the pre-fusion IR's (ir_pre_fusion.txt), where ingested;
--   wrapper_peak_bytes: what its output code allocates at most (peak_memory);
--   measured_peak_bytes: the largest call_peak_bytes of its calls in the trace (calls:
--   how many; an ambiguous call counts for each of its candidates);
--   wrapper_minus_measured, measured_ratio = measured / wrapper.
--   An allocator snapshot's view (allocator_peak) joins on measured_timeline_id /
--   device where the database has one.
CREATE OR REPLACE VIEW memory_estimate_vs_measured AS
WITH graphs AS (
    SELECT g.timeline_id AS measured_timeline_id, g.graph_timeline_id, g.call_seq
    FROM call_graphs g
), per_graph AS (
    SELECT g.measured_timeline_id, g.graph_timeline_id, count(*) AS calls,
           max(m.call_peak_bytes) AS measured_peak_bytes, any_value(m.device) AS device
    FROM graphs g JOIN call_memory m
      ON m.timeline_id = g.measured_timeline_id AND m.call_seq = g.call_seq
    WHERE m.memory_events > 0
    GROUP BY ALL
), timelines_of AS (  -- the graph itself and its copies, with the measurement
    SELECT measured_timeline_id, graph_timeline_id AS timeline_id, graph_timeline_id
    FROM per_graph
    UNION
    SELECT c.measured_timeline_id, c.timeline_id, c.copy_of
    FROM graph_copies c
), ir AS (
    SELECT w.graph_class,
           max(i.ir_peak_bytes) FILTER (WHERE i.ir_stage IS DISTINCT FROM 'pre_fusion')
               AS ir_peak_bytes,
           max(i.ir_peak_bytes) FILTER (WHERE i.ir_stage = 'pre_fusion')
               AS ir_pre_fusion_peak_bytes
    FROM ir_vs_wrapper_peak i JOIN _output_graphs w ON w.timeline_id = i.wrapper_timeline_id
    GROUP BY ALL
)
SELECT t.timeline_id, json_extract_string(r.attrs, '$.aot_id') AS aot_id,
       p.measured_timeline_id, p.device, ir.ir_peak_bytes, pk.peak_bytes AS wrapper_peak_bytes,
       p.measured_peak_bytes, p.calls,
       pk.peak_bytes - p.measured_peak_bytes AS wrapper_minus_measured,
       round(p.measured_peak_bytes / nullif(pk.peak_bytes, 0), 3) AS measured_ratio,
       ir.ir_pre_fusion_peak_bytes
FROM timelines_of t
JOIN per_graph p ON p.measured_timeline_id = t.measured_timeline_id
                AND p.graph_timeline_id = t.graph_timeline_id
JOIN timeline_records r ON r.timeline_id = t.timeline_id
JOIN _output_graphs og ON og.timeline_id = t.timeline_id
LEFT JOIN ir ON ir.graph_class = og.graph_class
LEFT JOIN peak_memory pk ON pk.timeline_id = t.timeline_id;
