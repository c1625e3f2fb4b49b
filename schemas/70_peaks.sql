-- One peak: every memory figure tlview has, one row per timeline, saying what it is.
--
-- "What was the peak?" has an answer of each kind: what the compiler planned, what its
-- scheduler IR or FX graph estimates, what the allocator measured (in whole blocks, as
-- torch.cuda.max_memory_allocated() counts, or in the bytes asked for), what the
-- profiler's memory events saw. The views below put them side by side and name the kind,
-- so that `ORDER BY peak_bytes DESC` never ranks a compile-time estimate above a
-- measured OOM without saying so; a run's peak is its most measured figure.

-- peaks: per timeline with a memory figure.
--   timeline_id, run_id; figure: allocator_blocks | allocator_requested |
--   profiler_memory | jax_memory_profile | compiler_plan | scheduler_estimate |
--   fx_graph_estimate; measured: true for the first four; what: the figure in words;
--   peak_bytes; requested_bytes: for a snapshot, its peak in requested bytes beside the
--   whole-block one (allocator_peak.allocated_bytes); at_step: where it happens: a
--   schedule step (compiled timelines, memory_curve), a trace entry (event_index of a
--   snapshot; -1: the window's start), 0 for a JAX memory profile (one instant); at_node:
--   that step's node (compiled timelines; memory_profile for a JAX profile); at_time_ns:
--   when, Unix ns (a snapshot's entry; a profiler trace's memory event on its own clock,
--   ts_ns + the trace's baseTimeNanoseconds; a JAX profile's time_nanos); device; the
--   compiled graph's repeat it is (copy_of, as timelines.copy_of: sum figures WHERE copy_of
--   IS NULL); title (timelines.title); preference: 1 = the most measured (allocator
--   blocks), then requested bytes, profiler or JAX memory, compiler plan, scheduler IR, FX
--   graph. A JAX memory profile's figure is the device bytes of the buffers live at the
--   dump (on a GPU each buffer rounded up to 256 B: what memory_stats()['bytes_in_use']
--   counts).
--   Sources: allocator_peak (51_allocator_curve.sql), measured_peak_memory (42_profile_steps.sql),
--   memory_profile_sites (55_memory_profile.sql), peak_memory (10_core_views.sql). A
--   snapshot whose block sizes are estimated (timeline_notes.block_bytes_estimated) gives
--   its requested bytes instead.
CREATE OR REPLACE VIEW peaks AS
WITH est AS (
    SELECT timeline_id, bool_or(COALESCE(TRY_CAST(json_extract(attrs, '$.block_bytes_estimated')
                                                   AS BIGINT), 0) > 0) AS estimated
    FROM timeline_notes GROUP BY timeline_id
), snap AS (
    SELECT p.timeline_id,
           CASE WHEN COALESCE(e.estimated, false) THEN 'allocator_requested'
                ELSE 'allocator_blocks' END AS figure,
           CASE WHEN COALESCE(e.estimated, false) THEN p.allocated_bytes ELSE p.block_bytes END
               AS peak_bytes,
           p.allocated_bytes AS requested_bytes,
           CASE WHEN COALESCE(e.estimated, false) THEN p.event_index ELSE p.block_event_index END
               AS at_step
    FROM allocator_peak p LEFT JOIN est e USING (timeline_id)
), prof AS (
    SELECT m.timeline_id, arg_max(m.peak_allocated, (m.peak_allocated, -m.peak_ts_ns)) AS peak_bytes,
           arg_max(m.peak_ts_ns, (m.peak_allocated, -m.peak_ts_ns)) AS ts_ns,
           arg_max(m.device, (m.peak_allocated, -m.peak_ts_ns)) AS device
    FROM measured_peak_memory m WHERE m.peak_allocated IS NOT NULL GROUP BY m.timeline_id
), f AS (
    SELECT s.timeline_id, s.figure, s.peak_bytes, s.requested_bytes, s.at_step,
           NULL::VARCHAR AS at_node, c.time_us * 1000 AS at_time_ns, NULL::VARCHAR AS device
    FROM snap s
    LEFT JOIN allocator_curve c ON c.timeline_id = s.timeline_id AND c.event_index = s.at_step
    UNION ALL
    SELECT p.timeline_id, 'profiler_memory', p.peak_bytes, NULL, NULL, NULL,
           p.ts_ns + COALESCE(TRY_CAST(json_extract(r.attrs, '$.baseTimeNanoseconds') AS BIGINT), 0),
           p.device
    FROM prof p JOIN timeline_records r USING (timeline_id)
    UNION ALL
    -- a JAX device memory profile: the bytes its buffers hold on the device at the dump
    -- (memory_profile_sites, which sums them: on a GPU what memory_stats()['bytes_in_use']
    -- said then), at its one step, when the profile was taken (its time_nanos)
    SELECT r.timeline_id, 'jax_memory_profile', COALESCE(s.bytes, 0), NULL, 0,
           'memory_profile', TRY_CAST(json_extract(r.attrs, '$.time_nanos') AS BIGINT), NULL
    FROM timeline_records r
    LEFT JOIN (SELECT timeline_id, CAST(sum(bytes) AS BIGINT) AS bytes
               FROM memory_profile_sites GROUP BY timeline_id) s USING (timeline_id)
    WHERE r.format = 'jax_memory_profile'
    UNION ALL
    SELECT pm.timeline_id,
           CASE r.format WHEN 'inductor_ir' THEN 'scheduler_estimate'
                         WHEN 'aot_fx_graph' THEN 'fx_graph_estimate'
                         ELSE 'compiler_plan' END,
           pm.peak_bytes, NULL, pm.peak_step, pm.node, NULL, NULL
    FROM peak_memory pm JOIN timeline_records r USING (timeline_id)
    WHERE r.format IN ('inductor_wrapper', 'inductor_ir', 'aot_fx_graph', 'xla_buffer_assignment')
)
SELECT f.timeline_id, t.run_id, f.figure,
       f.figure IN ('allocator_blocks', 'allocator_requested', 'profiler_memory',
                    'jax_memory_profile') AS measured,
       CASE f.figure
           WHEN 'allocator_blocks' THEN 'measured by the allocator in whole blocks (what '
                || 'torch.cuda.max_memory_allocated() counts)'
           WHEN 'allocator_requested' THEN 'measured by the allocator in requested bytes'
           WHEN 'profiler_memory' THEN 'measured by the profiler''s memory events (the '
                || 'allocator''s total allocated)'
           WHEN 'jax_memory_profile' THEN 'live bytes of a JAX memory profile'
           WHEN 'compiler_plan' THEN CASE WHEN t.format = 'xla_buffer_assignment'
                THEN 'planned by the compiler (XLA buffer assignment)'
                ELSE 'planned by the compiler (the output code''s allocations)' END
           WHEN 'scheduler_estimate' THEN 'estimated from the scheduler IR'
           WHEN 'fx_graph_estimate' THEN 'estimated from the FX graph'
       END AS what,
       f.peak_bytes, f.requested_bytes, f.at_step, f.at_node, f.at_time_ns,
       COALESCE(f.device, t.device) AS device, t.copy_of, t.title,
       CASE f.figure WHEN 'allocator_blocks' THEN 1 WHEN 'allocator_requested' THEN 2
                     WHEN 'profiler_memory' THEN 3 WHEN 'jax_memory_profile' THEN 3
                     WHEN 'compiler_plan' THEN 4 WHEN 'scheduler_estimate' THEN 5
                     ELSE 6 END AS preference
FROM f JOIN timelines t USING (timeline_id)
ORDER BY f.timeline_id;

-- run_peaks: per run, its peak: the most measured figure it has (the lowest
-- peaks.preference), the largest of that kind (e.g. of several ranks' snapshots), copies
-- left out. Columns as in peaks, and figures: how many timelines of the run have a figure
-- of any kind.
CREATE OR REPLACE VIEW run_peaks AS
SELECT p.run_id, p.timeline_id, p.title, p.figure, p.measured, p.what, p.peak_bytes,
       p.requested_bytes, p.at_step, p.at_node, p.at_time_ns, p.device,
       count(*) OVER (PARTITION BY p.run_id) AS figures
FROM peaks p
WHERE p.copy_of IS NULL AND p.run_id IS NOT NULL
QUALIFY row_number() OVER (PARTITION BY p.run_id
                           ORDER BY p.preference, p.peak_bytes DESC, p.timeline_id) = 1;
