-- Named queries of the terminal UI's ranks screen (tlview.store.rank_queries). Every value
-- is a ? parameter; the figures are those of the views in 45_ranks.sql.

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
