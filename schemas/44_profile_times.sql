-- Measured time per node and kernel: scheduler-IR nodes through the output-code node
-- they became (ir_node_times), collectives, kernels and every node (collectives_measured,
-- kernel_times, node_times).

-- _ir_wrapper_steps (and ir_node_times, below): scheduler-IR nodes and the output-code
-- node they became, whose measured time they show. The IR timeline and the output code of the same compile are paired
-- as in ir_vs_wrapper_peak (same folder); the IR nodes that launch work (all but
-- MultiOutput and Nop nodes) map in order onto the output code's launches, and the
-- mapping is used only when it agrees everywhere: as many launches on both sides,
-- each extern IR node on an extern launch of the same kernel, each other on a Triton
-- or C++ launch (method 'ir_launch_order'); otherwise attach_method says
-- 'ir_order_mismatch'.
--   attach_method 'no_launch': MultiOutput / Nop nodes, which launch nothing.
CREATE OR REPLACE VIEW _ir_wrapper_steps AS
WITH ir AS (
    SELECT n.timeline_id, n.step, n.node, n.node_class, n.ir_type, n.kernel,
           NOT (n.ir_type = 'MultiOutput' OR n.node_class LIKE 'Nop%') AS launches
    FROM nodes n JOIN timeline_records t USING (timeline_id)
    WHERE t.format = 'inductor_ir'
), ir_l AS (
    SELECT *, row_number() OVER (PARTITION BY timeline_id ORDER BY step) AS k
    FROM ir WHERE launches
), w_l AS (
    SELECT *, row_number() OVER (PARTITION BY timeline_id ORDER BY step) AS k
    FROM _output_nodes WHERE kind IS NOT NULL
), pairs AS (
    SELECT DISTINCT ir_timeline_id, wrapper_timeline_id FROM ir_vs_wrapper_peak
), matched AS (
    SELECT p.ir_timeline_id, p.wrapper_timeline_id, i.step AS ir_step, w.step AS wrapper_step,
           COALESCE(i.node_class LIKE 'ExternKernel%' AND w.kind = 'extern' AND i.kernel = w.kernel
                    OR i.node_class NOT LIKE 'ExternKernel%' AND w.kind IN ('triton', 'cpp'),
                    false) AS agrees
    FROM pairs p
    JOIN ir_l i ON i.timeline_id = p.ir_timeline_id
    FULL JOIN w_l w ON w.timeline_id = p.wrapper_timeline_id AND w.k = i.k
), ok AS (
    SELECT ir_timeline_id, wrapper_timeline_id, bool_and(agrees AND ir_step IS NOT NULL
                                                         AND wrapper_step IS NOT NULL) AS all_agree
    FROM matched WHERE ir_timeline_id IS NOT NULL GROUP BY ALL
)
SELECT ir.timeline_id, ir.step, ir.node, ir.node_class, ir.ir_type, ir.launches,
       m.wrapper_timeline_id, m.wrapper_step, COALESCE(o.all_agree, false) AS all_agree
FROM ir
LEFT JOIN matched m ON m.ir_timeline_id = ir.timeline_id AND m.ir_step = ir.step
LEFT JOIN ok o ON o.ir_timeline_id = m.ir_timeline_id AND o.wrapper_timeline_id = m.wrapper_timeline_id;

-- ir_node_times: the scheduler-IR nodes with the measured times of _ir_wrapper_steps.
CREATE OR REPLACE VIEW ir_node_times AS
SELECT i.timeline_id, i.step, i.node, i.node_class, i.ir_type, i.wrapper_timeline_id,
       i.wrapper_step, t.kernel, t.measured_timeline_id, t.invocations, t.n_gpu_events,
       t.total_ns, t.mean_ns, t.confidence,
       CASE WHEN NOT i.launches THEN 'no_launch'
            WHEN NOT i.all_agree THEN 'ir_order_mismatch'
            WHEN t.attach_method IN ('triton_name_order', 'extern_cpu_op', 'cpu_op',
                                     'no_gpu_work')
            THEN 'ir_launch_order+' || t.attach_method
            ELSE t.attach_method END AS attach_method
FROM _ir_wrapper_steps i
LEFT JOIN output_node_times t
  ON t.timeline_id = i.wrapper_timeline_id AND t.step = i.wrapper_step AND i.all_agree;

-- collectives_measured: the scheduler IR's collectives (core view `collectives`) with
-- the measured time of the node that issued them, where attached (see ir_node_times).
--   total_ns / mean_ns / invocations: of the issuing node's GPU work (the NCCL kernel).
CREATE OR REPLACE VIEW collectives_measured AS
SELECT c.*, t.measured_timeline_id, t.invocations, t.total_ns, t.mean_ns, t.attach_method
FROM collectives c
LEFT JOIN ir_node_times t ON t.timeline_id = c.timeline_id AND t.node = c.node;

-- kernel_times: per output-code kernel (the wrapper's `kernels` view), its measured
-- time summed over its nodes: launches = nodes x invocations attached. copy_of / counted
-- as in output_node_times (a copy's rows repeat its graph's times).
CREATE OR REPLACE VIEW kernel_times AS
SELECT timeline_id, kernel, any_value(kind) AS kind, measured_timeline_id,
       count(*) AS nodes, CAST(sum(invocations) AS BIGINT) AS launches,
       CAST(sum(n_gpu_events) AS BIGINT) AS n_gpu_events,
       CAST(sum(total_ns) AS BIGINT) AS total_ns,
       CAST(sum(total_ns) / nullif(sum(invocations), 0) AS BIGINT) AS mean_ns_per_launch,
       any_value(copy_of) AS copy_of, bool_and(counted) AS counted
FROM output_node_times
WHERE kind IS NOT NULL AND measured_timeline_id IS NOT NULL
GROUP BY timeline_id, kernel, measured_timeline_id;

-- node_times: measured time beside every node that has one, output code and scheduler
-- IR alike (what the TUI shows next to a step). Only nodes a trace was attached to; the
-- others, and why, are in output_node_times / ir_node_times.
--   timeline_id, step, node, kernel: the node; kind: triton | cpp | extern | NULL for
--   output code, 'ir' for scheduler-IR nodes; measured_timeline_id: the trace;
--   invocations, n_gpu_events, total_ns, mean_ns (per invocation); attach_method and
--   confidence as in output_node_times / ir_node_times (confidence < 1 / candidates
--   marks an ambiguous call's share); copy_of: the timeline a copy's times come from;
--   counted: true on exactly one row per attributed time (output-code rows of the
--   timeline a graph is attributed through): sum(total_ns) WHERE counted, with
--   unattached_kernels, adds up to the trace's measured total. IR and copy rows repeat
--   times counted elsewhere.
CREATE OR REPLACE VIEW node_times AS
WITH o AS MATERIALIZED (SELECT * FROM output_node_times WHERE measured_timeline_id IS NOT NULL)
SELECT timeline_id, step, node, kernel, kind, measured_timeline_id, invocations,
       n_gpu_events, total_ns, mean_ns, attach_method, confidence, copy_of, counted
FROM o
UNION ALL
SELECT i.timeline_id, i.step, i.node, t.kernel, 'ir', t.measured_timeline_id, t.invocations,
       t.n_gpu_events, t.total_ns, t.mean_ns,
       CASE WHEN t.attach_method IN ('triton_name_order', 'extern_cpu_op', 'cpu_op',
                                     'no_gpu_work')
            THEN 'ir_launch_order+' || t.attach_method ELSE t.attach_method END,
       t.confidence, NULL, false
FROM _ir_wrapper_steps i
JOIN o t ON t.timeline_id = i.wrapper_timeline_id AND t.step = i.wrapper_step
WHERE i.launches AND i.all_agree;
