-- Named queries of `tlview report` (store/report.py). Each reads only public views and
-- takes its values as ? parameters; the report prints each with its values in place,
-- as the SQL that reproduces a figure (`tlview sql` or the duckdb CLI runs it as is).

-- name: report_run
SELECT * FROM runs WHERE run_id = ?;

-- name: report_run_names
-- The runs that hold a source (a run registered by an ingest whose files all failed
-- holds none).
SELECT run_id, name FROM run_records r
WHERE EXISTS (SELECT 1 FROM source_runs s WHERE s.run_id = r.run_id) ORDER BY run_id;

-- name: report_artifacts
-- The run's files (the first 50; runs.n_sources counts them all).
SELECT source_id, path, kind, size, timelines, first_ns, last_ns
FROM run_artifacts WHERE run_id = ? ORDER BY source_id LIMIT 50;

-- name: report_empty_artifacts
SELECT path, kind FROM run_artifacts WHERE run_id = ? AND timelines = 0 ORDER BY source_id;

-- name: report_skipped
SELECT json_extract_string(attrs, '$.skipped') AS skipped FROM run_records WHERE run_id = ?;

-- name: report_peaks
-- Every memory figure of a run, the run's peak first (the order of run_peaks).
SELECT timeline_id, title, figure, what, peak_bytes, requested_bytes, at_step, at_node,
       device
FROM peaks
WHERE run_id = ? AND copy_of IS NULL
ORDER BY preference, peak_bytes DESC, timeline_id;

-- name: report_ooms
SELECT o.timeline_id, t.title, o.event_index, o.time_us, o.requested_bytes, o.device_free,
       o.allocated_bytes, o.reserved_bytes, o.block_bytes, o.largest_free_block,
       o.request_fits, o.stream
FROM ooms o JOIN timelines t USING (timeline_id)
WHERE t.run_id = ?
ORDER BY o.timeline_id, o.event_index;

-- name: report_held_total
-- What the blocks live after one trace entry of a snapshot hold: requested bytes, whole
-- blocks, and how much of it was made before the recording window began.
SELECT count(*) AS blocks, sum(requested_size) AS bytes, sum(size) AS block_bytes,
       COALESCE(sum(requested_size) FILTER (WHERE origin = 'before_window'), 0) AS before_window_bytes,
       count(*) FILTER (WHERE origin = 'before_window') AS before_window_blocks,
       COALESCE(sum(requested_size) FILTER (WHERE site = '<no frames>'), 0) AS no_frames_bytes,
       count(*) FILTER (WHERE site = '<no frames>') AS no_frames_blocks
FROM blocks_live_at(?, ?);

-- name: report_held_by_site
SELECT site, count(*) AS blocks, sum(requested_size) AS bytes, sum(size) AS block_bytes
FROM blocks_live_at(?, ?)
GROUP BY site ORDER BY bytes DESC, site LIMIT 10;

-- name: report_held_by_graph
-- The same blocks by the compiled graph, planned buffer and output-code line that made
-- them (planned_vs_actual), with the model's line (the allocation site).
SELECT COALESCE(p.graph, '(not a compiled graph''s buffer)') AS graph, p.buffer,
       p.line AS output_code_line, b.site, count(*) AS blocks, sum(b.requested_size) AS bytes
FROM blocks_live_at(?, ?) b
LEFT JOIN planned_vs_actual p ON p.timeline_id = ? AND p.alloc_index = b.alloc_index
GROUP BY ALL ORDER BY bytes DESC, graph, p.buffer LIMIT 12;

-- name: report_held_graphs
-- The same blocks by compiled graph only, largest first.
SELECT COALESCE(p.graph, '(not a compiled graph''s buffer)') AS graph, count(*) AS blocks,
       sum(b.requested_size) AS bytes
FROM blocks_live_at(?, ?) b
LEFT JOIN planned_vs_actual p ON p.timeline_id = ? AND p.alloc_index = b.alloc_index
GROUP BY ALL ORDER BY bytes DESC, graph;

-- name: report_plan_calls
SELECT c.timeline_id, c.call_index, c.graph, c.planned_peak_bytes, c.measured_peak_bytes,
       c.measured_peak_event, c.planned_live_bytes, c.unplanned_call_bytes,
       c.other_graph_bytes, c.optimizer_bytes, c.before_window_bytes, c.other_bytes,
       c.rounding_bytes, c.mapped_allocations, c.unmapped_allocations, c.not_allocated_buffers
FROM planned_vs_actual_calls c JOIN timeline_runs t USING (timeline_id)
WHERE t.run_id = ?
ORDER BY c.timeline_id, c.call_index;

-- name: report_plan_unmapped
-- Why planned_vs_actual maps no call of a run's snapshot: the output-code files its frames
-- name, and whether an ingested output code allocates at those lines.
SELECT w.filename, w.wrapper_timeline_id, w.unmapped_reason
FROM wrapper_files w JOIN timeline_runs t ON t.source_id = w.source_id
WHERE t.run_id = ?;

-- name: report_memory_estimates
SELECT m.timeline_id, m.aot_id, m.measured_timeline_id, m.ir_peak_bytes, m.wrapper_peak_bytes,
       m.measured_peak_bytes, m.calls
FROM memory_estimate_vs_measured m JOIN timeline_runs t USING (timeline_id)
JOIN timeline_runs mt ON mt.timeline_id = m.measured_timeline_id
WHERE t.run_id = $1 AND mt.run_id = $1
QUALIFY row_number() OVER (PARTITION BY m.aot_id, m.measured_timeline_id  -- a graph once
                           ORDER BY m.timeline_id) = 1
ORDER BY m.timeline_id, m.measured_timeline_id;

-- name: report_graphs
SELECT graph, device, timeline_id, n_sources, planned_peak_bytes, len(forms) AS timelines
FROM graphs WHERE run_id = ? ORDER BY timeline_id;

-- name: report_step_time
-- The run's step time: the median over its traces of each trace's median ProfilerStep
-- (the CPU range of ProfilerStep#N), the longest step, and how many.
WITH s AS (
    SELECT p.timeline_id, median(p.dur_ns) AS m, max(p.dur_ns) AS x, count(*) AS n
    FROM profiler_steps p JOIN timeline_runs t USING (timeline_id)
    WHERE t.run_id = ? GROUP BY p.timeline_id
)
SELECT CAST(median(m) AS BIGINT) AS step_ns, max(x) AS max_step_ns, sum(n) AS steps,
       count(*) AS traces
FROM s;

-- name: report_steps
-- Per trace of the run, its ProfilerSteps and the GPU work they launched (step_totals),
-- the slowest traces first (the first 16).
SELECT s.timeline_id, count(*) AS steps, CAST(median(s.cpu_dur_ns) AS BIGINT) AS median_step_ns,
       max(s.cpu_dur_ns) AS max_step_ns, CAST(sum(s.kernel_ns) AS BIGINT) AS kernel_ns,
       CAST(sum(s.comm_ns) AS BIGINT) AS comm_ns
FROM step_totals s JOIN timeline_runs t USING (timeline_id)
WHERE t.run_id = ?
GROUP BY s.timeline_id ORDER BY max_step_ns DESC, s.timeline_id LIMIT 16;

-- name: report_traces
SELECT t.timeline_id, t.title, (SELECT count(*) FROM profiler_steps p
                                WHERE p.timeline_id = t.timeline_id) AS profiler_steps
FROM timelines t WHERE t.run_id = ? AND t.format IN ('kineto', 'jax_trace')
ORDER BY t.timeline_id;

-- name: report_top_kernels
SELECT k.name, k.category, CAST(sum(k.launches) AS BIGINT) AS launches,
       CAST(sum(k.total_ns) AS BIGINT) AS total_ns,
       round(100.0 * sum(k.total_ns) / sum(sum(k.total_ns)) OVER (), 2) AS share_pct
FROM kernels_measured k JOIN timeline_runs t USING (timeline_id)
WHERE t.run_id = ?
GROUP BY k.name, k.category ORDER BY total_ns DESC, k.name LIMIT 10;

-- name: report_overlap
-- Per trace (rank) and device, its communication exposed and overlapped by compute, the
-- most exposed first (the first 16).
SELECT o.timeline_id, o.rank, o.device, o.comm_ns, o.overlapped_ns, o.exposed_ns,
       o.overlap_pct
FROM comm_overlap_summary o JOIN timeline_runs t USING (timeline_id)
WHERE t.run_id = ?
ORDER BY o.exposed_ns DESC, o.timeline_id, o.device LIMIT 16;

-- name: report_stragglers
-- Per rank, the wait its late arrivals caused the others (stragglers) and its clock's
-- offset from the reference rank (clock_offsets), the worst first (the first 16).
SELECT s.rank, s.timeline_id, s.caused_wait_ns, s.delay_ns, s.times_last, s.n_collectives,
       s.step_ns, s.wait_share, o.offset_ns, o.spread_ns, o.reference_rank
FROM stragglers s JOIN timeline_runs t USING (timeline_id)
LEFT JOIN clock_offsets o ON o.run = s.run AND o.rank = s.rank
WHERE t.run_id = ?
ORDER BY s.caused_wait_ns DESC, s.rank LIMIT 16;

-- name: report_rank_runs
-- The ranks of the run's traces: which ranks the job had, which have no trace.
SELECT r.run AS rank_run, r.world_size, r.ranks, r.missing
FROM rank_runs r
WHERE r.run IN (SELECT k.run FROM rank_traces k JOIN timeline_runs t USING (timeline_id)
                WHERE t.run_id = ?)
ORDER BY r.run;

-- name: report_compiles
SELECT m.compile_id, m.kind, m.co_name, m.co_filename, m.entire_frame_compile_time_s,
       m.inductor_compile_time_s, m.fail_type, m.fail_reason
FROM compilation_metrics m JOIN timeline_runs t USING (timeline_id)
WHERE t.run_id = ? AND m.kind = 'compilation_metrics'
ORDER BY m.compile_id;

-- name: report_recompiles
-- Compiles of a frame after its first (the frame: its code's name and file).
SELECT count(*) - count(DISTINCT (m.co_name, m.co_filename)) AS recompiles
FROM compilation_metrics m JOIN timeline_runs t USING (timeline_id)
WHERE t.run_id = ? AND m.kind = 'compilation_metrics';

-- name: report_estimates
SELECT e.timeline_id, e.aot_id, e.measured_timeline_id, e.estimated_ns, e.measured_ns,
       e.ratio
FROM estimate_vs_measured e JOIN timeline_runs t USING (timeline_id)
JOIN timeline_runs mt ON mt.timeline_id = e.measured_timeline_id
WHERE t.run_id = $1 AND mt.run_id = $1 AND e.level = 'graph'
ORDER BY e.timeline_id, e.measured_timeline_id;

-- name: report_estimate_sources
-- Whether the run has what estimate_vs_measured needs: estimates (a TORCH_TRACE log with
-- LOG_TLPARSE=1) and a profiler trace attached to the estimated graphs.
SELECT (SELECT count(*) FROM inductor_estimates i JOIN timeline_runs t USING (timeline_id)
        WHERE t.run_id = $1) AS estimates,
       (SELECT count(*) FROM timeline_records r JOIN timeline_runs t USING (timeline_id)
        WHERE t.run_id = $1 AND r.format IN ('kineto', 'jax_trace')) AS traces,
       (SELECT count(*) FROM call_graphs g JOIN timeline_runs t USING (timeline_id)
        WHERE t.run_id = $1) AS attached_calls;

-- name: report_warnings
SELECT n.timeline_id, t.title, w.warning
FROM timeline_notes n JOIN timelines t USING (timeline_id),
     LATERAL (SELECT unnest(from_json(json_extract(n.attrs, '$.warnings'), '["VARCHAR"]'))
              AS warning) w
WHERE t.run_id = ? AND t.copy_of IS NULL
ORDER BY n.timeline_id;

-- name: report_stream_overlaps
-- Profiler traces whose kernels overlap on one stream (a stream runs one at a time: an
-- overlap is a clock or recording fault), per trace: how many.
SELECT timeline_id, count(*) AS overlapping
FROM (SELECT g.timeline_id, g.ts_ns < lag(g.end_ns) OVER (PARTITION BY g.timeline_id, g.device,
                                                          g.stream ORDER BY g.ts_ns, g.seq) AS o
      FROM gpu_activity g JOIN timeline_runs t USING (timeline_id) WHERE t.run_id = ?)
WHERE o GROUP BY timeline_id ORDER BY timeline_id;

-- name: report_snapshot_events
-- The trace entries of each snapshot of the run (its ring buffer holds at most
-- max_entries, 100,000 by default), its OOMs and whether its sums are to be trusted (the
-- ingest's notes: timeline_notes).
SELECT n.timeline_id, TRY_CAST(json_extract(n.attrs, '$.events') AS BIGINT) AS entries,
       COALESCE(TRY_CAST(json_extract(n.attrs, '$.actions.oom') AS BIGINT), 0) AS ooms,
       TRY_CAST(json_extract(n.attrs, '$.consistent') AS BOOLEAN) AS consistent
FROM timeline_notes n JOIN timelines t USING (timeline_id)
WHERE t.run_id = ? AND t.format = 'cuda_snapshot' ORDER BY n.timeline_id;

-- name: report_curve
-- A snapshot's curve squeezed to $2 points (the largest allocated and block bytes of the
-- entries each covers), for the report's picture.
SELECT min(event_index) AS first_event, max(allocated_bytes) AS allocated_bytes,
       max(block_bytes) AS block_bytes, max(reserved_bytes) AS reserved_bytes
FROM allocator_curve
WHERE timeline_id = $1
GROUP BY (event_index + 1) * $2 // ((SELECT max(event_index) + 2 FROM allocator_curve
                                     WHERE timeline_id = $1))
ORDER BY first_event;

-- name: report_formats
-- What the run holds, by timeline format: which sections and queries apply.
SELECT format, count(*) AS timelines FROM timelines WHERE run_id = ? GROUP BY format;

-- name: report_graph_replays
-- The run's CUDA-graph replays (graph_replays), per trace: how many, the GPU events they ran,
-- how many of those are attached to a compiled node, and their GPU time.
SELECT r.timeline_id, count(*) AS replays, CAST(sum(r.n_kernels) AS BIGINT) AS replay_kernels,
       CAST(sum(r.n_attached) AS BIGINT) AS attached_kernels,
       CAST(sum(r.n_kernels - r.n_attached) AS BIGINT) AS unattached_kernels,
       CAST(sum(r.gpu_ns) AS BIGINT) AS gpu_ns,
       list(DISTINCT r.graph_timeline_id ORDER BY r.graph_timeline_id)
           FILTER (WHERE r.graph_timeline_id IS NOT NULL) AS graph_timeline_ids
FROM graph_replays r JOIN timeline_runs t USING (timeline_id)
WHERE t.run_id = ?
GROUP BY r.timeline_id ORDER BY r.timeline_id;

-- name: report_replay_unattached
-- The GPU events of the run's CUDA-graph replays that no compiled node claims, by why
-- (unattached_kernels).
SELECT u.reason, count(*) AS kernels, CAST(sum(u.dur_ns) AS BIGINT) AS dur_ns
FROM unattached_kernels u JOIN kernel_launches l USING (timeline_id, seq)
JOIN timeline_runs t USING (timeline_id)
WHERE t.run_id = ? AND l.graph_launch
GROUP BY u.reason ORDER BY kernels DESC, u.reason;

-- name: report_whatif
-- What each straggler cost (whatif_stragglers of the run's rank traces): per rank that
-- arrived last somewhere, its costliest ProfilerStep as measured and without its late
-- arrivals, the ranks in the order of stragglers (the wait they caused, the worst first;
-- the first 16).
SELECT w.run, w.step, w.rank, w.n_late, w.saved_ns, w.measured_ns, w.modelled_ns
FROM whatif_stragglers w JOIN stragglers s USING (run, rank)
WHERE w.run IN (SELECT k.run FROM rank_traces k JOIN timeline_runs t USING (timeline_id)
                WHERE t.run_id = ?)
QUALIFY row_number() OVER (PARTITION BY w.run, w.rank ORDER BY w.saved_ns DESC, w.step) = 1
ORDER BY s.caused_wait_ns DESC, w.rank LIMIT 16;

-- name: report_jax_profiles
-- The run's JAX device memory profiles: the bytes live at each dump (peaks), the buffers.
SELECT p.timeline_id, p.title, p.device, p.peak_bytes AS live_bytes,
       (SELECT CAST(sum(s.buffers) AS BIGINT) FROM memory_profile_sites s
        WHERE s.timeline_id = p.timeline_id) AS buffers
FROM peaks p
WHERE p.run_id = ? AND p.figure = 'jax_memory_profile'
ORDER BY p.peak_bytes DESC, p.timeline_id;

-- name: report_jax_sites
-- Who holds the memory of a JAX profile: its live bytes by the Python line that made
-- them (memory_profile_sites), the largest first (the first 10).
SELECT site, buffers, bytes
FROM memory_profile_sites WHERE timeline_id = ?
ORDER BY bytes DESC, site LIMIT 10;

-- name: report_fr_dumps
-- The run's Flight Recorder dumps by incident and status (fr_dumps): read (ok), superseded
-- by a newer dump of the same ring, in conflict with another process's dump of the rank,
-- empty, or naming no rank.
SELECT d.incident, d.status, count(*) AS dumps, list(DISTINCT d.rank ORDER BY d.rank) AS ranks,
       list(DISTINCT d.form ORDER BY d.form) AS forms,
       list(DISTINCT d.version ORDER BY d.version) AS versions
FROM fr_dumps d JOIN timeline_runs t USING (timeline_id)
WHERE t.run_id = ?
GROUP BY ALL ORDER BY d.incident NULLS LAST, d.status;

-- name: report_has_graph_launches
-- Whether the run's profiler traces hold a CUDA-graph launch (graph_replays applies).
SELECT EXISTS (SELECT 1 FROM measured m JOIN timeline_runs t USING (timeline_id)
               WHERE t.run_id = ? AND m.category = 'runtime'
                 AND m.name LIKE '%GraphLaunch%') AS has;

-- name: report_has_collectives
-- Whether the run's profiler traces hold a collective kernel (the rank views apply:
-- stragglers, clock_offsets, rank_runs match collectives and have no row without one).
SELECT EXISTS (SELECT 1 FROM gpu_activity g JOIN timeline_runs t USING (timeline_id)
               WHERE t.run_id = ? AND g.category = 'comm') AS has;

-- name: report_allocs_once
-- The allocations of the run's snapshots with their output-code line and graph call
-- (_wrapper_allocs), once for the whole report: its rows of the run's timelines as a
-- temporary table of that name in the report's own connection, which planned_vs_actual,
-- planned_vs_actual_calls and graph_calls then read in its place (as report_match_once),
-- where each names it several times over and plans it anew (report_plan_calls on the
-- compiled_train fixture: 1.0 CPU-s, 0.3 with it). Its rows are partitioned by snapshot
-- timeline and the report asks those views of the run's snapshots only, so their rows are
-- the views' own; report_allocs_drop drops it when the report is built. (Each figure's
-- SQL reads the views as they are: pasted, it gives the same.)
CREATE TEMP TABLE _wrapper_allocs AS
SELECT * FROM main._wrapper_allocs
WHERE timeline_id IN (SELECT timeline_id FROM timeline_runs WHERE run_id = $1);

-- name: report_allocs_drop
DROP TABLE IF EXISTS temp._wrapper_allocs;

-- name: report_match_once
-- The collective matching of the run's rank traces, once for the whole report: the rank
-- traces (rank_traces) and the rows of _collective_ranks for the run's rank runs as
-- temporary tables of those names, in the report's own connection, which stragglers,
-- clock_offsets, collective_skew, late_arrivals and whatif_stragglers then read in their
-- place (DuckDB binds a view's names when it is queried, temporary objects first), where
-- each would derive them anew. Their rows for the run are the views' own;
-- report_match_drop drops them when the report is built. (Each figure's SQL reads the
-- views as they are: pasted, it gives the same.)
CREATE TEMP TABLE rank_traces AS SELECT * FROM main.rank_traces;
CREATE TEMP TABLE _collective_ranks AS
SELECT * FROM main._collective_ranks
WHERE run IN (SELECT k.run FROM rank_traces k JOIN timeline_runs t USING (timeline_id)
              WHERE t.run_id = $1);

-- name: report_match_drop
DROP TABLE IF EXISTS temp._collective_ranks;
DROP TABLE IF EXISTS temp.rank_traces;
