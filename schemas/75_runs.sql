-- Runs and their compiled graphs, each listed once (the rule of a run: 05_runs.sql).

-- graphs: per run, each compiled graph once, with every timeline that shows it.
--   run_id, graph: its AOT id (0_forward) or name; device; timeline_id: the one to open
--   (its output code, else its scheduler IR, else its FX graph; never a copy);
--   forms: [{form, label, timeline_id, copy_of, source_kind}] every timeline of it: its
--   output code from output_code.py, a torch log and a TORCH_TRACE log (copies of one
--   another: timelines.copy_of), its scheduler IR, its FX graph;
--   n_sources: how many artifacts it came from; planned_peak_bytes: its output code's
--   planned peak (peak_memory of timeline_id where that is output code).
CREATE OR REPLACE VIEW graphs AS
WITH g AS (
    SELECT run_id, subject AS graph, device, timeline_id, copy_of, form, label, source_kind,
           format
    FROM _timelines_labelled WHERE graph_form
), agg AS (
    SELECT g.run_id, g.graph, g.device,
           arg_min(g.timeline_id, (CASE g.format WHEN 'inductor_wrapper' THEN 0
                                                 WHEN 'inductor_ir' THEN 1 ELSE 2 END,
                                   g.copy_of IS NOT NULL, g.timeline_id)) AS timeline_id,
           list({'form': g.form, 'label': g.label, 'timeline_id': g.timeline_id,
                 'copy_of': g.copy_of, 'source_kind': g.source_kind} ORDER BY g.timeline_id)
               AS forms,
           count(DISTINCT g.source_kind) AS n_sources
    FROM g GROUP BY g.run_id, g.graph, g.device
)
SELECT a.*, CASE WHEN r.format = 'inductor_wrapper' THEN pm.peak_bytes END AS planned_peak_bytes
FROM agg a JOIN timeline_records r USING (timeline_id)
LEFT JOIN peak_memory pm USING (timeline_id)
ORDER BY a.run_id, a.timeline_id;

-- timeline_spans: the time each timed timeline covers, Unix ns: a profiler trace's events
-- (ts_ns + its baseTimeNanoseconds: the trace's own clock), a snapshot's trace entries,
-- a TORCH_TRACE log's timed compile events. Timelines with no time are not listed.
--   timeline_id, first_ns, last_ns (the last event's end).
CREATE OR REPLACE VIEW timeline_spans AS
WITH k AS (
    SELECT e.timeline_id, min(e.ts_ns) AS s, max(e.ts_ns + COALESCE(e.dur_ns, 0)) AS e
    FROM events_kernel_measured e GROUP BY e.timeline_id
)
SELECT k.timeline_id,
       k.s + COALESCE(TRY_CAST(json_extract(r.attrs, '$.baseTimeNanoseconds') AS BIGINT), 0)
           AS first_ns,
       k.e + COALESCE(TRY_CAST(json_extract(r.attrs, '$.baseTimeNanoseconds') AS BIGINT), 0)
           AS last_ns
FROM k JOIN timeline_records r USING (timeline_id)
UNION ALL
SELECT timeline_id, min(ts_ns), max(ts_ns) FROM events_allocator_action GROUP BY ALL
UNION ALL
SELECT timeline_id, min(ts_ns), max(ts_ns + COALESCE(dur_ns, 0))
FROM events_compile_event WHERE category = 'chromium' GROUP BY ALL;

-- run_artifacts: every source of a run, what it is and the time it covers.
--   run_id, source_id, path, kind (_source_kinds), size (bytes), sha256, format,
--   timelines (how many it gave; 0: a file that recorded nothing), first_ns / last_ns
--   (timeline_spans over its timelines), ingested_at.
CREATE OR REPLACE VIEW run_artifacts AS
WITH per AS (
    SELECT t.source_id, count(*) AS timelines, min(sp.first_ns) AS first_ns,
           max(sp.last_ns) AS last_ns
    FROM timeline_records t LEFT JOIN timeline_spans sp USING (timeline_id)
    GROUP BY t.source_id
)
SELECT sr.run_id, s.source_id, s.path, k.source_kind AS kind, s.size, s.sha256, s.format,
       COALESCE(per.timelines, 0) AS timelines, per.first_ns, per.last_ns, s.ingested_at
FROM sources s JOIN source_runs sr USING (source_id) JOIN _source_kinds k USING (source_id)
LEFT JOIN per USING (source_id)
ORDER BY s.source_id;

-- runs: one row per run (run_records), what it holds.
--   run_id, name (unique), root (the path the user named); n_sources; artifacts:
--   [{kind, files}] its sources by kind (_source_kinds), most first; n_timelines (copies
--   of a compiled graph and compile logs left out), n_graphs (graphs); ranks: the
--   distributed ranks its artifacts state; torch_version, triton_version (a TORCH_TRACE
--   log's compilation metrics), cuda_version (those metrics, else a profiler trace's
--   CUDA runtime), nccl_version (a profiler trace's distributedInfo); first_ns /
--   last_ns: the time it covers, Unix ns (profiler events on their traces' clocks,
--   allocator trace entries, TORCH_TRACE compile events), NULL where no artifact is
--   timed. Its peak: run_peaks (a view of its own: the peaks cost a scan of every
--   memory figure).
CREATE OR REPLACE VIEW runs AS
WITH src AS (
    SELECT sr.run_id, k.source_id, k.source_kind
    FROM source_runs sr JOIN _source_kinds k USING (source_id)
), arts AS (
    SELECT run_id, sum(n) AS n_sources,
           list({'kind': source_kind, 'files': n} ORDER BY n DESC, source_kind) AS artifacts
    FROM (SELECT run_id, source_kind, count(*) AS n FROM src GROUP BY ALL) GROUP BY run_id
), tl0 AS MATERIALIZED (  -- the timelines, derived once for tl and ng
    SELECT run_id, copy_of, format, device, subject, rank, graph_form FROM _timelines_labelled
), tl AS (
    SELECT run_id,
           count(*) FILTER (WHERE copy_of IS NULL AND format <> 'torch_trace') AS n_timelines,
           list(DISTINCT rank ORDER BY rank) FILTER (WHERE rank IS NOT NULL) AS ranks
    FROM tl0 GROUP BY run_id
), metrics AS (
    SELECT t.run_id,
           any_value(json_extract_string(e.attrs, '$.metrics.pytorch_version')) AS torch_version,
           any_value(json_extract_string(e.attrs, '$.metrics.triton_version')) AS triton_version,
           any_value(json_extract_string(e.attrs, '$.metrics.cuda_version')) AS cuda_version
    FROM events_compile_event e JOIN timeline_runs t USING (timeline_id)
    WHERE e.name IN ('compilation_metrics', 'bwd_compilation_metrics')
    GROUP BY t.run_id
), kin AS (
    SELECT t.run_id,
           any_value(json_extract_string(r.attrs, '$.distributedInfo.nccl_version')) AS nccl_version,
           any_value(TRY_CAST(json_extract(r.attrs, '$.cuda_runtime_version') AS INTEGER))
               AS cuda_runtime
    FROM timeline_records r JOIN timeline_runs t USING (timeline_id)
    WHERE r.format IN ('kineto', 'jax_trace') GROUP BY t.run_id
), span AS (
    SELECT t.run_id, min(s.first_ns) AS first_ns, max(s.last_ns) AS last_ns
    FROM timeline_spans s JOIN timeline_runs t USING (timeline_id) GROUP BY t.run_id
), ng AS (
    -- graphs' rows, counted by its key (run, subject, device) over the graph forms in tl0:
    -- reading graphs would derive the timelines a second time (and join its peaks)
    SELECT run_id, count(*) AS n_graphs
    FROM (SELECT DISTINCT run_id, subject, device FROM tl0 WHERE graph_form)
    GROUP BY run_id
)
SELECT r.run_id, r.name, r.root, COALESCE(a.n_sources, 0) AS n_sources, a.artifacts,
       COALESCE(tl.n_timelines, 0) AS n_timelines, COALESCE(ng.n_graphs, 0) AS n_graphs,
       COALESCE(tl.ranks, []) AS ranks,
       m.torch_version, m.triton_version,
       COALESCE(m.cuda_version, CAST(k.cuda_runtime // 1000 AS VARCHAR) || '.'
                || CAST(k.cuda_runtime % 1000 // 10 AS VARCHAR)) AS cuda_version,
       k.nccl_version, sp.first_ns, sp.last_ns
FROM run_records r
LEFT JOIN arts a USING (run_id)
LEFT JOIN tl USING (run_id)
LEFT JOIN metrics m USING (run_id)
LEFT JOIN kin k USING (run_id)
LEFT JOIN span sp USING (run_id)
LEFT JOIN ng USING (run_id)
WHERE a.n_sources > 0
ORDER BY r.run_id;
