-- Named queries of the many-ranks views (schemas/45_ranks_traces.sql to 49_ranks_whatif.sql): the terminal UI's ranks
-- screen (tlview.store.rank_queries) and the ranks report of `tlview ingest`
-- (cli/rank_report.py). Every value is a ? parameter; the figures are the views'.

-- name: tui_rank_runs
SELECT run, world_size, ranks, missing, n_traces FROM rank_runs ORDER BY run;

-- name: tui_rank_collectives
-- The collectives of run $1, in order of first arrival.
SELECT collective_id, match_key, match_method, kind, collective, pg, profiler_step, n_ranks,
       group_size, complete, first_arrival_ns, skew_ns, last_rank, comm_ns, bytes,
       CAST(busbw_gbps AS DOUBLE)
FROM collective_skew WHERE run = $1
ORDER BY first_arrival_ns, collective_id;

-- name: tui_rank_strips
-- Per collective of run $1 and bucket of its ranks ($2 buckets over the run's ranks in
-- rank order): the latest arrival in the bucket after the collective's first, and
-- whether the bucket holds its last rank.
WITH a AS MATERIALIZED (
    SELECT collective_id, rank, start_ns, late_order,
           min(start_ns) OVER (PARTITION BY collective_id) AS first_ns
    FROM _arrivals WHERE run = $1
), r AS (
    SELECT rank, row_number() OVER (ORDER BY rank) - 1 AS i, count(*) OVER () AS n
    FROM (SELECT DISTINCT rank FROM rank_traces WHERE run = $1)
)
SELECT a.collective_id, (r.i * $2) // r.n AS bucket, max(a.start_ns - a.first_ns),
       bool_or(a.late_order = 1)
FROM a JOIN r USING (rank)
GROUP BY a.collective_id, bucket
ORDER BY a.collective_id, bucket;

-- name: tui_rank_stragglers
SELECT s.rank, s.timeline_id, s.n_collectives, s.times_last, s.caused_wait_ns, s.delay_ns,
       CAST(s.wait_share AS DOUBLE), s.caused_wait_order, o.offset_ns, o.spread_ns,
       s.step_basis
FROM stragglers s LEFT JOIN clock_offsets o USING (run, rank)
WHERE s.run = $1 ORDER BY s.caused_wait_order;

-- name: tui_rank_arrivals
-- The ranks of collective $2 of run $1, latest arrival first.
SELECT rank, timeline_id, seq, start_ns - min(start_ns) OVER () AS late_ns,
       max(start_ns) OVER () - start_ns AS wait_ns, dur_ns, kernel
FROM collective_ranks WHERE run = $1 AND collective_id = $2
ORDER BY start_ns DESC, rank;

-- name: tui_rank_late
-- For every collective of run $1: its last rank, and where that rank's timeline is just
-- before it arrived (the compiled node, else the kernel before, else its own kernel).
SELECT collective_id, rank, timeline_id, seq, before_seq, before_kernel, graph_timeline_id,
       step, node
FROM late_arrivals WHERE run = $1;

-- name: tui_rank_run_of
SELECT run FROM rank_traces WHERE timeline_id = $1;

-- name: rank_traces_among
-- How many of the timelines $1 (a list of ids) are profiler traces: the report below is
-- made only when an ingest added one.
SELECT count(*) FROM timeline_records
WHERE format IN ('kineto', 'jax_trace') AND list_contains(?::INTEGER[], timeline_id);

-- name: rank_runs_among
-- The runs holding one of the timelines $1 (a list of ids), from rank_traces alone (a
-- fraction of a second where rank_report's matching takes seconds per GB of trace): its
-- traces, ranks, missing ranks, collective kernels, duplicated and out-of-range ranks.
WITH t AS (
    SELECT * FROM rank_traces WHERE run IN (
        SELECT run FROM rank_traces WHERE list_contains(?::INTEGER[], timeline_id))
)
SELECT r.run, r.world_size, r.n_traces, r.ranks, r.missing,
       list(t.timeline_id ORDER BY t.timeline_id) AS timeline_ids,
       CAST(sum(t.n_collectives) AS BIGINT) AS n_collectives,
       list(t.rank ORDER BY t.rank) FILTER (WHERE t.status = 'duplicate') AS dup_ranks,
       list(t.name ORDER BY t.rank) FILTER (WHERE t.status = 'duplicate') AS dup_names,
       list(t.rank ORDER BY t.rank) FILTER (WHERE t.status = 'rank_out_of_range')
           AS out_of_range
FROM rank_runs r JOIN t USING (run)
GROUP BY ALL ORDER BY r.run;

-- The report of `tlview ingest` on the runs of rank traces it added, in five queries (the
-- runs, then what the matching found per run; cli/rank_report.py puts them together).
-- Each part re-derives the matching, and one query holding all four needed their memory
-- at once: at 1,024 ranks over 256MB even on one thread, where each alone fits.

-- name: rank_report_runs
-- The runs holding one of the timeline ids $1 (a list): ranks present, missing,
-- duplicated and out of range.
WITH r AS (
    SELECT * FROM rank_runs
    WHERE run IN (SELECT run FROM rank_traces WHERE list_contains(?::INTEGER[], timeline_id))
), d AS (
    SELECT run, list(rank ORDER BY rank) AS dup_ranks, list(name ORDER BY rank) AS dup_names
    FROM rank_traces WHERE status = 'duplicate' GROUP BY run
), bad AS (
    SELECT run, list(rank ORDER BY rank) AS out_of_range
    FROM rank_traces WHERE status = 'rank_out_of_range' GROUP BY run
)
SELECT r.run, r.world_size, r.ranks, r.missing, d.dup_ranks, d.dup_names, bad.out_of_range
FROM r LEFT JOIN d USING (run) LEFT JOIN bad USING (run)
ORDER BY r.run;

-- name: rank_report_collectives
-- Per run: collectives, those with every rank of their group, those matched across
-- ranks, those whose ranks disagree, and how they were matched.
SELECT run, count(*) AS n_collectives, count(*) FILTER (WHERE complete) AS n_complete,
       count(*) FILTER (WHERE n_ranks > 1) AS n_matched,
       count(*) FILTER (WHERE NOT consistent) AS n_inconsistent,
       list(DISTINCT match_method ORDER BY match_method) AS methods
FROM collective_skew GROUP BY run;

-- name: rank_report_unmatched
SELECT run, count(*) AS n_unmatched, any_value(reason) AS reason
FROM collective_unmatched GROUP BY run;

-- name: rank_report_offsets
SELECT run, count(*) FILTER (WHERE method = 'collective_end_median') AS n_offsets,
       arg_max(offset_ns, abs(offset_ns)) AS max_offset_ns,
       arg_max(rank, abs(offset_ns)) AS max_offset_rank,
       max(spread_ns) AS max_spread_ns
FROM clock_offsets GROUP BY run;

-- name: rank_report_straggler
SELECT run, rank AS straggler, caused_wait_ns, wait_share, step_basis FROM stragglers
WHERE caused_wait_order = 1 AND caused_wait_ns > 0;

-- name: rank_whatif_worst
-- The step and rank of run $1 whose late arrivals cost the most (whatif_stragglers).
SELECT run, step, rank, n_late, saved_ns, measured_ns, modelled_ns
FROM whatif_stragglers WHERE run = $1
ORDER BY saved_ns DESC, step, rank LIMIT 1;

-- The ranks' caches (store/caches.py RANK_CACHES), rebuilt whole: the matching spans every
-- rank. Each is a view of its derivation (schemas/45_ranks_traces.sql to 47_ranks_skew.sql) until the database holds a
-- run of two or more traces, then a table made from it (with the derivation's columns as
-- they are now: a table made by an older tlview is made again, whole).

-- name: rank_caches_are_tables
-- (A FILTER: see attachment_caches_are_tables.)
SELECT count(*) FILTER (WHERE schema_name = 'main' AND table_name IN (
    '_cache_rank_traces', '_cache_pg_ranks', '_cache_arrivals')) = 3
FROM duckdb_tables();

-- name: rank_cache_rows_among
-- Whether the cached matching holds rows of the timelines $1 (a list of ids): timelines
-- whose events changed.
SELECT EXISTS (SELECT 1 FROM _cache_rank_traces WHERE list_contains($1::INTEGER[], timeline_id));

-- name: rank_trace_count
-- How many profiler traces the database holds (a run of several needs two).
SELECT count(*) FROM timeline_records WHERE format IN ('kineto', 'jax_trace');

-- name: rank_runs_of_several
-- Whether some run holds two or more traces (then the matching is cached).
SELECT EXISTS (SELECT 1 FROM rank_traces WHERE run IS NOT NULL GROUP BY run HAVING count(*) > 1);

-- name: cache_drop_rank_traces
DROP TABLE IF EXISTS _cache_rank_traces;

-- name: cache_view_drop_rank_traces
DROP VIEW IF EXISTS _cache_rank_traces;

-- name: cache_make_rank_traces
CREATE TABLE _cache_rank_traces AS
SELECT * FROM _rank_traces_derived ORDER BY timeline_id;

-- name: cache_drop_pg_ranks
DROP TABLE IF EXISTS _cache_pg_ranks;

-- name: cache_view_drop_pg_ranks
DROP VIEW IF EXISTS _cache_pg_ranks;

-- name: cache_make_pg_ranks
CREATE TABLE _cache_pg_ranks AS SELECT * FROM _pg_ranks_derived;

-- name: cache_drop_arrivals
DROP TABLE IF EXISTS _cache_arrivals;

-- name: cache_view_drop_arrivals
DROP VIEW IF EXISTS _cache_arrivals;

-- name: cache_make_arrivals
-- Stored by run and collective: the views read one run, or group by collective.
CREATE TABLE _cache_arrivals AS
SELECT * FROM _arrivals_derived ORDER BY run, collective_id, rank;
