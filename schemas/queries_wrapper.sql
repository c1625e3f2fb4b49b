-- Named queries over torch logs / Inductor output code (schemas/30_wrapper.sql).

-- name: kernels_of_timeline
SELECT kernel, kind, launches, first_step, profiler_name, fused_aten_ops
FROM kernels WHERE timeline_id = ? ORDER BY first_step;

-- name: compare_ir_wrapper_peak
-- Any scheduler-IR timeline against any wrapper timeline (ids as parameters): the two
-- planned peaks (ir_vs_wrapper_peak's columns).
SELECT i.peak_bytes AS ir_peak_bytes, w.peak_bytes AS wrapper_peak_bytes,
       i.peak_bytes - w.peak_bytes AS ir_minus_wrapper,
       round(i.peak_bytes / nullif(w.peak_bytes, 0), 3) AS ratio
FROM peak_memory i, peak_memory w
WHERE i.timeline_id = ? AND w.timeline_id = ?;
