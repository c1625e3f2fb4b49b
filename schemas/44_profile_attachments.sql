-- Every measured event of a compiled call attached to its output-code node
-- (kernel_attachments), each node's measured time (output_node_times), CUDA-graph
-- replays (graph_replays), and what no node claims (unattached_kernels, unattached_nodes).
-- Which graph each call ran: 43_profile_calls.sql.

-- CUDA-graph replays.
-- Under CUDA graphs (torch.compile mode="reduce-overhead", cudagraph trees) a compiled
-- call replays a captured graph: one cudaGraphLaunch on the CPU, and on the GPU every
-- kernel of the graph partition it captured, each with the launch's correlation id and no
-- CPU op of its own. Its Triton kernels attach by name and order as in an eager call
-- (_triton_attachments, in the order they ran). The other kernels (cuBLAS, attention,
-- reductions of ATen ops, NCCL collectives) have no CPU op to attach through; they are
-- placed by order: between two consecutive Triton kernels of the replay (a gap) run the
-- kernels of the extern nodes between those two Triton nodes in the output code, in the
-- partition the replay's Triton kernels belong to (all nodes when the code has no
-- partitions), in order. Nodes that never launch GPU work (a collective's wait_tensor: on
-- the GPU a stream dependency, no kernel) are left out of the gap and show no_gpu_work.
-- The gap's kernels are cut into runs, one per op call (a kernel that finishes a split-K
-- product, its name holding splitKreduce or split_k, continues the run before it), and runs
-- and nodes fall into three classes: collectives (an NCCL/RCCL kernel; a _c10d_functional
-- op), GEMMs (cuBLAS, cutlass, nvjet kernels, not attention; aten::mm, addmm, bmm, baddbmm,
-- _scaled_mm, _int_mm) and the rest:
--   * one extern node in the gap: every kernel of the gap is its own;
--   * as many runs as nodes, and as many of each class: the k-th run of a class to the
--     k-th node of that class (the order of one class holds where kernels of different
--     streams swapped places);
--   * as many runs as nodes, not of the same classes: the k-th run to the k-th node
--     (confidence 0.5);
--   * else, when every class has as many runs as nodes or a single node (or neither runs
--     nor nodes): runs to the nodes of their class in order, all of them to a class's single
--     node;
--   * else the gap's kernels stay unattached (unattached_kernels says why).
-- method graph_replay_order. A replay with no Triton kernel attached cannot be placed.

-- _is_gemm_kernel(name), _is_matmul_op(profiler_name), _is_comm_op(profiler_name),
-- _no_gpu_op(profiler_name): the kernel and op families of the rules.
CREATE OR REPLACE MACRO _is_gemm_kernel(k) AS
    regexp_matches(k, '(?i)gemm|xmma|nvjet|cutlass|cublas')
    AND NOT regexp_matches(k, '(?i)fmha|flash|attention|sdpa|softmax');
CREATE OR REPLACE MACRO _is_matmul_op(p) AS
    regexp_matches(p, '^aten::(mm|addmm|bmm|baddbmm|_scaled_mm|_int_mm|_addmm_activation)$');
CREATE OR REPLACE MACRO _no_gpu_op(p) AS
    regexp_matches(p, '^_c10d_functional(_autograd)?::wait_tensor$');
CREATE OR REPLACE MACRO _is_comm_op(p) AS
    regexp_matches(p, '^_c10d_functional(_autograd)?::') AND NOT _no_gpu_op(p);

-- _kernel_attachments_derived: kernel_attachments (below), computed from the events (kept in _cache_kernel_attachments).
CREATE OR REPLACE VIEW _kernel_attachments_derived AS
WITH ta AS MATERIALIZED (SELECT * FROM _triton_attachments),
-- the replays' non-Triton kernels, placed by order (see "CUDA-graph replays" above): each
-- with the Triton nodes around it (prev_step / next_step: NULL before the first / after the
-- last) and the partition of the replay (of its attached Triton kernels)
rk AS (
    SELECT timeline_id, call_seq, correlation, seq, kernel, category, ts_ns, dur_ns,
           row_number() OVER (PARTITION BY timeline_id, call_seq, correlation
                              ORDER BY ts_ns, seq) AS pos
    FROM _call_launches WHERE graph_launch
), anchors AS (
    SELECT rk.timeline_id, rk.call_seq, rk.correlation, rk.pos, ta.graph_timeline_id,
           ta.step, ta.partition, ta.candidates, ta.class_rank
    FROM rk JOIN ta USING (timeline_id, seq)
), replays AS (
    SELECT timeline_id, call_seq, correlation, graph_timeline_id,
           any_value(partition) AS partition, any_value(candidates) AS candidates,
           any_value(class_rank) AS class_rank
    FROM anchors GROUP BY ALL
), k AS (
    SELECT rk.*, r.graph_timeline_id, r.partition, r.candidates, r.class_rank
    FROM rk JOIN replays r USING (timeline_id, call_seq, correlation)
    WHERE rk.kernel NOT LIKE 'triton!_%' ESCAPE '!'
), prev AS (
    SELECT k.timeline_id, k.seq, k.graph_timeline_id, a.step AS prev_step
    FROM k ASOF LEFT JOIN anchors a
      ON a.timeline_id = k.timeline_id AND a.call_seq = k.call_seq
     AND a.correlation = k.correlation AND a.graph_timeline_id = k.graph_timeline_id
     AND k.pos >= a.pos
), nxt AS (
    SELECT k.timeline_id, k.seq, k.graph_timeline_id, a.step AS next_step
    FROM k ASOF LEFT JOIN anchors a
      ON a.timeline_id = k.timeline_id AND a.call_seq = k.call_seq
     AND a.correlation = k.correlation AND a.graph_timeline_id = k.graph_timeline_id
     AND k.pos <= a.pos
),
rg AS MATERIALIZED (
    SELECT k.*, p.prev_step, n.next_step
    FROM k JOIN prev p USING (timeline_id, seq, graph_timeline_id)
    JOIN nxt n USING (timeline_id, seq, graph_timeline_id)
), g AS (
    SELECT *, (NOT regexp_matches(kernel, '(?i)splitkreduce|split_k')) AS starts_run,
           CASE WHEN category = 'comm' THEN 'comm' WHEN _is_gemm_kernel(kernel) THEN 'gemm'
                ELSE 'other' END AS cls
    FROM rg
), runs AS (
    SELECT *, sum(CASE WHEN starts_run THEN 1 ELSE 0 END) OVER w AS run_idx
    FROM g
    WINDOW w AS (PARTITION BY timeline_id, call_seq, correlation, graph_timeline_id,
                              prev_step ORDER BY pos ROWS UNBOUNDED PRECEDING)
), runs1 AS (
    -- a gap opening with a continuation: its first kernel starts the first run anyway
    SELECT * REPLACE (greatest(run_idx, 1) AS run_idx) FROM runs
), run_heads AS (
    SELECT timeline_id, call_seq, correlation, graph_timeline_id, prev_step, run_idx,
           arg_min(cls, pos) AS cls
    FROM runs1 GROUP BY ALL
), run_idx AS (
    SELECT *, row_number() OVER (
               PARTITION BY timeline_id, call_seq, correlation, graph_timeline_id, prev_step,
               cls ORDER BY run_idx) AS cls_idx
    FROM run_heads
), gaps AS (
    SELECT DISTINCT timeline_id, call_seq, correlation, graph_timeline_id, prev_step,
           next_step, partition
    FROM rg
), parted AS (
    SELECT timeline_id, bool_or(partition IS NOT NULL) AS parted
    FROM _output_nodes GROUP BY timeline_id
), gap_nodes AS (
    SELECT *, row_number() OVER (
               PARTITION BY timeline_id, call_seq, correlation, graph_timeline_id, prev_step
               ORDER BY step) AS node_idx,
           row_number() OVER (
               PARTITION BY timeline_id, call_seq, correlation, graph_timeline_id, prev_step,
               cls ORDER BY step) AS cls_idx
    FROM (SELECT gp.timeline_id, gp.call_seq, gp.correlation, gp.graph_timeline_id,
                 gp.prev_step, n.step, n.node,
                 CASE WHEN _is_comm_op(n.profiler_name) THEN 'comm'
                      WHEN _is_matmul_op(n.profiler_name) THEN 'gemm' ELSE 'other' END AS cls
          FROM gaps gp JOIN parted pt ON pt.timeline_id = gp.graph_timeline_id
          JOIN _output_nodes n
            ON n.timeline_id = gp.graph_timeline_id AND n.kind = 'extern'
           AND NOT _no_gpu_op(n.profiler_name)
           AND n.step > COALESCE(gp.prev_step, -1)
           AND n.step < COALESCE(gp.next_step, 9223372036854775807)
           AND (NOT pt.parted OR n.partition IS NOT DISTINCT FROM gp.partition))
), rc AS (
    SELECT timeline_id, call_seq, correlation, graph_timeline_id, prev_step,
           count(*) AS n_runs, count(*) FILTER (WHERE cls = 'comm') AS comm_runs,
           count(*) FILTER (WHERE cls = 'gemm') AS gemm_runs,
           count(*) FILTER (WHERE cls = 'other') AS other_runs
    FROM run_idx GROUP BY ALL
), counts AS (
    SELECT n.timeline_id, n.call_seq, n.correlation, n.graph_timeline_id, n.prev_step,
           count(*) AS n_nodes, count(*) FILTER (WHERE n.cls = 'comm') AS comm_nodes,
           count(*) FILTER (WHERE n.cls = 'gemm') AS gemm_nodes,
           count(*) FILTER (WHERE n.cls = 'other') AS other_nodes,
           any_value(rc.n_runs) AS n_runs, any_value(rc.comm_runs) AS comm_runs,
           any_value(rc.gemm_runs) AS gemm_runs, any_value(rc.other_runs) AS other_runs
    FROM gap_nodes n JOIN rc
      ON rc.timeline_id = n.timeline_id AND rc.call_seq = n.call_seq
     AND rc.correlation = n.correlation AND rc.graph_timeline_id = n.graph_timeline_id
     AND rc.prev_step IS NOT DISTINCT FROM n.prev_step
    GROUP BY ALL
), rules AS (
    -- rule: 'one' | 'by_class' | 'by_order' (0.5) | 'to_class' (see above) | NULL
    SELECT *,
           CASE WHEN n_nodes = 1 THEN 'one'
                WHEN n_runs = n_nodes AND comm_runs = comm_nodes AND gemm_runs = gemm_nodes
                THEN 'by_class'
                WHEN n_runs = n_nodes THEN 'by_order'
                WHEN (comm_runs = comm_nodes OR comm_nodes = 1)
                 AND (gemm_runs = gemm_nodes OR gemm_nodes = 1)
                 AND (other_runs = other_nodes OR other_nodes = 1)
                THEN 'to_class' END AS rule
    FROM counts
), placed AS (
    SELECT r.timeline_id, r.call_seq, r.correlation, r.graph_timeline_id, r.prev_step,
           r.run_idx, n.step, n.node,
           CASE WHEN c.rule = 'by_order' THEN 0.5 ELSE 1.0 END AS base_confidence
    FROM run_idx r
    JOIN rules c
      ON c.timeline_id = r.timeline_id AND c.call_seq = r.call_seq
     AND c.correlation = r.correlation AND c.graph_timeline_id = r.graph_timeline_id
     AND c.prev_step IS NOT DISTINCT FROM r.prev_step
    JOIN gap_nodes n
      ON n.timeline_id = r.timeline_id AND n.call_seq = r.call_seq
     AND n.correlation = r.correlation AND n.graph_timeline_id = r.graph_timeline_id
     AND n.prev_step IS NOT DISTINCT FROM r.prev_step
     AND (c.rule = 'one'
          OR c.rule = 'by_class' AND n.cls = r.cls AND n.cls_idx = r.cls_idx
          OR c.rule = 'by_order' AND n.node_idx = r.run_idx
          OR c.rule = 'to_class' AND n.cls = r.cls
             AND (n.cls_idx = r.cls_idx
                  OR CASE r.cls WHEN 'comm' THEN c.comm_nodes WHEN 'gemm' THEN c.gemm_nodes
                                ELSE c.other_nodes END = 1))
),
ra AS (
    SELECT k.timeline_id, k.seq, k.call_seq, k.kernel, k.dur_ns, k.correlation,
           k.graph_timeline_id, p.step, p.node, p.base_confidence, k.candidates, k.class_rank
    FROM runs1 k JOIN placed p
      ON p.timeline_id = k.timeline_id AND p.call_seq = k.call_seq
     AND p.correlation = k.correlation AND p.graph_timeline_id = k.graph_timeline_id
     AND p.prev_step IS NOT DISTINCT FROM k.prev_step AND p.run_idx = k.run_idx
), a AS (
    SELECT timeline_id, seq, call_seq, kernel, dur_ns, graph_timeline_id, step, node, method,
           base_confidence, candidates, class_rank
    FROM ta
    UNION ALL
    SELECT timeline_id, seq, call_seq, kernel, dur_ns, graph_timeline_id, step, node,
           'graph_replay_order', base_confidence, candidates, class_rank
    FROM ra
    UNION ALL
    SELECT l.timeline_id, l.seq, l.call_seq, l.kernel, l.dur_ns, e.graph_timeline_id, e.step,
           e.node, 'extern_cpu_op', e.confidence, e.candidates, e.class_rank
    FROM _extern_ops e JOIN _call_launches l
      ON l.timeline_id = e.timeline_id AND l.call_seq = e.call_seq
     AND l.launch_ts_ns >= e.ts_ns AND l.launch_ts_ns < e.end_ns
    WHERE l.kernel NOT LIKE 'triton!_%' ESCAPE '!'
    UNION ALL
    SELECT o.timeline_id, o.op_seq, o.call_seq, o.name, o.dur_ns, g.graph_timeline_id, n.step,
           n.node, 'cpu_op', CASE WHEN o.same_name = n.same_name THEN 1.0 ELSE 0.5 END,
           g.candidates, g.class_rank
    FROM _call_cpu_ops o
    JOIN call_graphs g ON g.timeline_id = o.timeline_id AND g.call_seq = o.call_seq AND g.cpu
    JOIN _output_nodes n
      ON n.timeline_id = g.graph_timeline_id AND n.kind IN ('cpp', 'extern')
     AND n.profiler_name = o.op_name AND n.occurrence = o.occurrence
)
SELECT timeline_id, seq, call_seq, kernel, dur_ns, graph_timeline_id, step, node, method,
       base_confidence / candidates AS confidence, candidates, 1.0 / candidates AS weight,
       CAST(dur_ns // candidates
            + CASE WHEN class_rank <= dur_ns % candidates THEN 1 ELSE 0 END AS BIGINT)
           AS share_ns
FROM a;

CREATE VIEW IF NOT EXISTS _cache_kernel_attachments AS SELECT * FROM _kernel_attachments_derived;

-- kernel_attachments: every measured event of a compiled call attached to its node.
--   timeline_id/seq: the measured event (a GPU event; for CPU graphs the CPU op);
--   graph_timeline_id/step/node: the output-code node (of the representative);
--   method: triton_name_order | extern_cpu_op | cpu_op | graph_replay_order (a kernel of a
--   CUDA-graph replay, placed by order: see above); confidence: as above, divided by
--   candidates; weight: 1 / candidates; share_ns: the part of dur_ns attributed here
--   (the whole of it unless the call is ambiguous; shares of one event sum to dur_ns).
CREATE OR REPLACE VIEW kernel_attachments AS
SELECT * FROM _cache_kernel_attachments;

-- _replay_idle_nodes: per compiled call that replayed a CUDA graph, the nodes of the
-- replayed partition that launch no GPU work (a collective's wait_tensor: in the graph a
-- stream dependency, no kernel): they ran, with nothing to measure (no_gpu_work).
CREATE OR REPLACE VIEW _replay_idle_nodes AS
SELECT DISTINCT t.timeline_id, t.call_seq, t.graph_timeline_id, n.step, n.node, t.candidates
FROM _triton_attachments t
JOIN _output_nodes n
  ON n.timeline_id = t.graph_timeline_id AND n.kind = 'extern' AND _no_gpu_op(n.profiler_name)
 AND n.partition IS NOT DISTINCT FROM t.partition
WHERE t.graph_launch;

-- output_node_times: per output-code node and trace, its measured time.
--   invocations: calls of the graph in which the node was found (an ambiguous call
--   counts for each of its candidates); n_gpu_events: measured events attached (GPU
--   events; CPU ops for CPU graphs); total_ns: their attributed shares (share_ns);
--   mean_ns = total_ns / invocations; attach_method: triton_name_order | extern_cpu_op
--   | cpu_op | no_gpu_work (its CPU op ran and launched nothing, e.g. wait_tensor; or, in a
--   CUDA-graph replay, a node that never launches GPU work) |
--   not_a_launch (return) | unattached (no trace call matched this node: see
--   unattached_nodes); where its events were attached by several methods (an extern node
--   of a CUDA graph: extern_cpu_op in the call that warmed it up, graph_replay_order in its
--   replays), the last of them by name; confidence: the lowest of its attachments.
--   copy_of: for a copy of a graph attributed through another timeline, that timeline
--   (this row repeats its times); counted: false for such copies, so that the sum of
--   total_ns over counted rows is the time attributed, each measured event once.
CREATE OR REPLACE VIEW output_node_times AS
WITH ka AS MATERIALIZED (
    SELECT * FROM kernel_attachments
), eo AS MATERIALIZED (
    SELECT * FROM _extern_ops
), on_ AS MATERIALIZED (
    SELECT * FROM _output_nodes
), calls AS (
    SELECT graph_timeline_id, step, timeline_id AS measured_timeline_id, call_seq,
           sum(share_ns) AS ns, count(*) AS n_events, max(method) AS method,
           min(confidence) AS confidence
    FROM ka GROUP BY ALL
    UNION ALL
    SELECT e.graph_timeline_id, e.step, e.timeline_id, e.call_seq, 0, 0, 'no_gpu_work',
           e.confidence / e.candidates
    FROM eo e
    WHERE NOT EXISTS (SELECT 1 FROM ka a
                      WHERE a.timeline_id = e.timeline_id AND a.call_seq = e.call_seq
                        AND a.graph_timeline_id = e.graph_timeline_id AND a.step = e.step)
    UNION ALL
    SELECT i.graph_timeline_id, i.step, i.timeline_id, i.call_seq, 0, 0, 'no_gpu_work',
           1.0 / i.candidates
    FROM _replay_idle_nodes i
), agg AS (
    SELECT graph_timeline_id, step, measured_timeline_id, count(DISTINCT call_seq) AS invocations,
           CAST(sum(n_events) AS BIGINT) AS n_gpu_events, CAST(sum(ns) AS BIGINT) AS total_ns,
           COALESCE(max(method) FILTER (WHERE method <> 'no_gpu_work'), 'no_gpu_work')
               AS method,
           min(confidence) AS confidence
    FROM calls GROUP BY ALL
), own AS (
    SELECT n.timeline_id, n.step, a.graph_timeline_id AS source_timeline_id,
           a.measured_timeline_id, CAST(NULL AS INTEGER) AS copy_of
    FROM on_ n JOIN agg a ON a.graph_timeline_id = n.timeline_id AND a.step = n.step
    UNION ALL
    SELECT n.timeline_id, n.step, c.copy_of, c.measured_timeline_id, c.copy_of
    FROM on_ n JOIN graph_copies c ON c.timeline_id = n.timeline_id
)
SELECT n.timeline_id, n.step, n.node, n.kernel, n.kind, o.measured_timeline_id,
       COALESCE(a.invocations, 0) AS invocations, COALESCE(a.n_gpu_events, 0) AS n_gpu_events,
       COALESCE(a.total_ns, 0) AS total_ns,
       CAST(a.total_ns / a.invocations AS BIGINT) AS mean_ns,
       COALESCE(a.method, CASE WHEN n.kind IS NULL THEN 'not_a_launch' ELSE 'unattached' END)
           AS attach_method,
       a.confidence, o.copy_of, o.copy_of IS NULL AS counted
FROM on_ n
LEFT JOIN own o ON o.timeline_id = n.timeline_id AND o.step = n.step
LEFT JOIN agg a ON a.graph_timeline_id = o.source_timeline_id AND a.step = n.step
               AND a.measured_timeline_id = o.measured_timeline_id;

-- unattached_kernels: measured GPU events no node claims, and why; with the attributed
-- ones (kernel_attachments) they account for every GPU event of a trace exactly once.
--   call_seq NULL: launched outside every compiled call (eager: the optimizer step, the
--   loss, a copy from the host, NCCL outside the graph) or with no launch record;
--   eager: true for those launched outside every compiled call.
CREATE OR REPLACE VIEW unattached_kernels AS
SELECT l.timeline_id, l.seq, l.call_seq, l.kernel, l.category, l.dur_ns, false AS eager,
       CASE WHEN NOT EXISTS (SELECT 1 FROM call_graphs g
                             WHERE g.timeline_id = l.timeline_id AND g.call_seq = l.call_seq)
            THEN 'no output-code timeline launches this call''s Triton kernels in this order'
            WHEN l.kernel LIKE 'triton!_%' ESCAPE '!'
            THEN 'more launches of this Triton kernel than the output code has'
            WHEN l.graph_launch
            THEN 'replayed by a CUDA graph between Triton kernels whose extern nodes its '
                 || 'kernels cannot be told apart for (or no Triton kernel of the replay '
                 || 'is attached)'
            WHEN (SELECT k.cpu_op FROM kernel_launches k WHERE k.timeline_id = l.timeline_id
                    AND k.seq = l.seq) IS NOT NULL
            THEN 'launched inside the call by ' || (SELECT k.cpu_op FROM kernel_launches k
                 WHERE k.timeline_id = l.timeline_id AND k.seq = l.seq) || ', no op of the '
                 || 'output code (around a CUDA-graph replay: the copy of inputs into the '
                 || 'graph''s static buffers)'
            ELSE 'launched outside every extern op of the output code' END AS reason
FROM _call_launches l
WHERE NOT EXISTS (SELECT 1 FROM kernel_attachments a
                  WHERE a.timeline_id = l.timeline_id AND a.seq = l.seq)
UNION ALL
SELECT k.timeline_id, k.seq, NULL, k.kernel, k.category, k.dur_ns, k.runtime IS NOT NULL,
       CASE WHEN k.runtime IS NULL
            THEN 'no launch record in the trace (no runtime call with its correlation id)'
            ELSE 'eager: launched outside every compiled call' END
FROM kernel_launches k
WHERE NOT EXISTS (SELECT 1 FROM _call_launches l
                  WHERE l.timeline_id = k.timeline_id AND l.seq = k.seq);

-- graph_replays: every CUDA-graph replay of a trace (a cudaGraphLaunch whose kernels ran).
--   timeline_id, correlation: the launch; launch_ts_ns, thread: when and where the CPU
--   asked; call_seq: the compiled call it ran in (NULL: outside every compiled call);
--   graph_timeline_id: the output code the call ran (call_graphs' first candidate);
--   partition: the graph partition it replays (of its attached Triton kernels);
--   n_kernels, gpu_ns: its GPU events and their summed durations; gpu_first_ns /
--   gpu_last_ns: their extent; n_attached: of its events, those attached to a node;
--   after_capture: the replay CUDA graph trees run right after capturing the graph, in the
--   call that captured it (call_graphs.mode cuda_graph_capture: the graph's first run), as
--   against the replays of later calls.
CREATE OR REPLACE VIEW graph_replays AS
WITH r AS (
    SELECT timeline_id, correlation, any_value(launch_ts_ns) AS launch_ts_ns,
           any_value(thread) AS thread, count(*) AS n_kernels,
           CAST(sum(dur_ns) AS BIGINT) AS gpu_ns, min(ts_ns) AS gpu_first_ns,
           max(ts_ns + dur_ns) AS gpu_last_ns
    FROM kernel_launches WHERE graph_launch GROUP BY timeline_id, correlation
), c AS (
    SELECT DISTINCT timeline_id, correlation, call_seq FROM _call_launches WHERE graph_launch
), g AS (
    SELECT timeline_id, call_seq, graph_timeline_id, mode FROM call_graphs WHERE class_rank = 1
), a AS (
    SELECT l.timeline_id, l.correlation, count(DISTINCT l.seq) AS n_attached,
           any_value(n.partition) AS partition
    FROM kernel_launches l JOIN kernel_attachments k USING (timeline_id, seq)
    LEFT JOIN _output_nodes n ON n.timeline_id = k.graph_timeline_id AND n.step = k.step
    WHERE l.graph_launch GROUP BY ALL
)
SELECT r.timeline_id, r.correlation, r.launch_ts_ns, r.thread, c.call_seq,
       g.graph_timeline_id, a.partition, r.n_kernels, r.gpu_ns, r.gpu_first_ns,
       r.gpu_last_ns, COALESCE(a.n_attached, 0) AS n_attached,
       COALESCE(g.mode = 'cuda_graph_capture', false) AS after_capture
FROM r LEFT JOIN c USING (timeline_id, correlation)
LEFT JOIN g USING (timeline_id, call_seq)
LEFT JOIN a USING (timeline_id, correlation)
ORDER BY r.timeline_id, r.launch_ts_ns;

-- unattached_nodes: launch nodes of an output-code timeline that a matched call ran
-- without any measured work being attached to them, why.
CREATE OR REPLACE VIEW unattached_nodes AS
SELECT g.timeline_id AS measured_timeline_id, g.call_seq, n.timeline_id, n.step, n.node,
       n.kernel, n.kind,
       CASE WHEN n.kind = 'triton' THEN 'the call launched fewer ' || n.kernel || ' kernels'
            WHEN n.partition IS NOT NULL AND g.mode IN ('cuda_graph_replay', 'cuda_graph_capture')
            THEN 'replayed in a CUDA graph: its kernels could not be told apart from its '
                 || 'neighbours'' (see unattached_kernels)'
            WHEN n.kind = 'cpp' THEN 'no CPU op ' || n.kernel || ' in the call (a CPU trace '
                 || 'shows C++ kernels with TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1)'
            ELSE 'no CPU op ' || n.profiler_name || ' at this position in the call'
       END AS reason
FROM call_graphs g JOIN _output_nodes n ON n.timeline_id = g.graph_timeline_id
WHERE n.kind IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM kernel_attachments a
                  WHERE a.timeline_id = g.timeline_id AND a.call_seq = g.call_seq
                    AND a.graph_timeline_id = n.timeline_id AND a.step = n.step)
  AND NOT EXISTS (SELECT 1 FROM _extern_ops e
                  WHERE e.timeline_id = g.timeline_id AND e.call_seq = g.call_seq
                    AND e.graph_timeline_id = n.timeline_id AND e.step = n.step)
  AND NOT EXISTS (SELECT 1 FROM _replay_idle_nodes i
                  WHERE i.timeline_id = g.timeline_id AND i.call_seq = g.call_seq
                    AND i.graph_timeline_id = n.timeline_id AND i.step = n.step);
