-- Views over torch logs and Inductor output code (ingest/torch_log.py,
-- ingest/inductor_wrapper.py, ingest/fx_graph.py).
--
-- Steps of an Inductor wrapper timeline (format 'inductor_wrapper'): every kernel
-- launch or op call in call(args) is one step, 0-based, in order (a Triton .run, a
-- cpp_fused_* call, extern_kernels.*, torch.ops.*); the return statement is one
-- more, last step (node 'return'). An allocation written between two launches
-- belongs to the step of the next launch; a `del` after launch k ends the name's
-- life at step k (a `del` that follows an allocation in the same gap counts as
-- live through the next launch). An extern/fallback op that allocates its outputs
-- allocates them at its own step. A reused storage (`# reuse`) is ONE buffer row,
-- its first name, live until its last name ends; later names are 0-byte rows
-- (layout 'reuse' / 'view' / 'tuple') with a buffer_aliased event.
--
-- Steps of an FX graph timeline (format 'aot_fx_graph'): one per node line;
-- placeholders are inputs; views and in-place ops allocate nothing.

-- kernels: one row per kernel (or extern op) of each wrapper timeline.
--   kernel: the kernel's name (triton_per_fused_..., cpp_fused_..., extern_kernels.mm,
--     torch.ops.aten.convolution_backward.default);
--   kind: triton | cpp | extern (or the async_compile method that defined it);
--   launches: how many times call() launches it; first_step / steps: where;
--   profiler_name: the name a profiler trace shows for it (aten::mm for extern_kernels.mm,
--     the kernel name itself for triton/cpp): the key a profiler ingest joins on;
--   fused_aten_ops: the ATen ops it fused ("Original ATen" comment), NULL where the
--     output code does not say; source_nodes: "Topologically Sorted Source Nodes";
--   kernel_source: the Triton/C++ source from the module (NULL for extern ops).
CREATE OR REPLACE VIEW kernels AS
SELECT n.timeline_id, n.kernel,
       any_value(n.node_class) AS kind,
       count(*) AS launches,
       min(n.step) AS first_step,
       list(n.step ORDER BY n.step) AS steps,
       any_value(json_extract_string(n.attrs, '$.profiler_name')) AS profiler_name,
       arg_min(from_json(json_extract(n.attrs, '$.original_aten'), '["VARCHAR"]'), n.step)
           FILTER (WHERE json_extract(n.attrs, '$.original_aten') IS NOT NULL) AS fused_aten_ops,
       arg_min(from_json(json_extract(n.attrs, '$.source_nodes'), '["VARCHAR"]'), n.step)
           FILTER (WHERE json_extract(n.attrs, '$.source_nodes') IS NOT NULL) AS source_nodes,
       any_value(json_extract_string(n.attrs, '$.kernel_source'))
           FILTER (WHERE json_extract(n.attrs, '$.kernel_source') IS NOT NULL) AS kernel_source
FROM nodes n JOIN timeline_records t USING (timeline_id)
WHERE t.format = 'inductor_wrapper' AND n.node_class <> 'return'
GROUP BY n.timeline_id, n.kernel;

-- _compile_timelines: wrapper and scheduler-IR timelines with the folder and file they
-- came from, and the AOT id (0_forward...) they belong to.
CREATE OR REPLACE VIEW _compile_timelines AS
SELECT t.timeline_id, t.format, t.name, s.path,
       regexp_replace(s.path, '/[^/]*$', '') AS folder,
       regexp_extract(s.path, '[^/]*$') AS file,
       json_extract_string(t.attrs, '$.aot_id') AS aot_id
FROM timeline_records t JOIN sources s USING (source_id)
WHERE t.format IN ('inductor_wrapper', 'inductor_ir');

-- ir_vs_wrapper_peak: the scheduler IR's estimate of a graph's peak next to the peak its
-- output code plans, for the same compile side by side. Both figures are the compiler's,
-- read from what it wrote (neither was measured: a profiler trace's or an allocator
-- snapshot's figures are in memory_estimate_vs_measured / planned_vs_actual).
--   A scheduler-IR timeline and a wrapper timeline are the same compile when their files
--   lie in the same folder and either the wrapper came from that folder's output_code.py
--   (TORCH_COMPILE_DEBUG's layout: model__0_forward_1.0/{ir_post_fusion.txt,output_code.py})
--   or the IR file is named after the wrapper's AOT id (0_forward.ir_post_fusion.txt).
--   A folder may hold both IRs of the compile: one row each.
--   ir_stage: post_fusion (ir_post_fusion.txt: the schedule the output code was generated
--   from) | pre_fusion (ir_pre_fusion.txt: before fusion, one node per IR buffer) | NULL
--   (an IR file named otherwise);
--   ir_peak_bytes: peak_memory of the IR timeline (the IR liveness rule, docs/liveness.md);
--   wrapper_peak_bytes: peak_memory of the wrapper timeline (what its output code
--   allocates: its storages, `# reuse` and `del` applied);
--   ir_minus_wrapper: ir - wrapper; ratio: ir / wrapper.
--   estimate_minus_real: the same as ir_minus_wrapper, under its name before 2026-11
--   (kept for queries written then; it called the output code's plan "real", which it is
--   not: use ir_minus_wrapper).
CREATE OR REPLACE VIEW ir_vs_wrapper_peak AS
SELECT w.aot_id, i.timeline_id AS ir_timeline_id, w.timeline_id AS wrapper_timeline_id,
       CASE WHEN i.file LIKE '%ir!_post!_fusion%' ESCAPE '!' THEN 'post_fusion'
            WHEN i.file LIKE '%ir!_pre!_fusion%' ESCAPE '!' THEN 'pre_fusion' END AS ir_stage,
       pi.peak_bytes AS ir_peak_bytes, pw.peak_bytes AS wrapper_peak_bytes,
       pi.peak_bytes - pw.peak_bytes AS ir_minus_wrapper,
       round(pi.peak_bytes / nullif(pw.peak_bytes, 0), 3) AS ratio,
       pi.node AS ir_peak_node, pw.node AS wrapper_peak_node,
       pi.peak_bytes - pw.peak_bytes AS estimate_minus_real
FROM _compile_timelines w
JOIN _compile_timelines i
  ON i.format = 'inductor_ir' AND w.format = 'inductor_wrapper' AND i.folder = w.folder
 AND (w.file = 'output_code.py' OR starts_with(i.file, w.aot_id || '.'))
LEFT JOIN peak_memory pi ON pi.timeline_id = i.timeline_id
LEFT JOIN peak_memory pw ON pw.timeline_id = w.timeline_id;
