-- How the ranks of each collective arrived: each trace's clock offset, the skew of each
-- collective instance, and what could not be matched.

-- clock_offsets: per rank trace, the offset of its clock from its run's reference rank
-- (estimated in collective_ranks, 46_ranks_collectives.sql) and how well the collectives fix it.
--   offset_ns: this clock minus the reference's (aligned time = base_ns + ts_ns -
--   offset_ns); reference_rank; via_rank: the partner it was measured against;
--   spread_ns: the median absolute deviation of its end differences from their median
--   (how far apart the ends of one collective fall: the offset's uncertainty);
--   n_collectives: collectives shared with the partner; method: reference |
--   collective_end_median | none (no matched collective: offset 0).
--   On the 2-rank fixture, whose ranks share one host clock (true offset 0), rank 1's
--   estimate is -13,134 ns with a spread of 14,406 ns: the ends of one collective differ
--   by 6 to 29 us there, the rank that arrived last finishing last.
CREATE OR REPLACE VIEW clock_offsets AS
WITH c AS (
    SELECT DISTINCT run, rank, offset_ns, reference_rank, offset_via_rank, offset_spread_ns,
           offset_collectives
    FROM _collective_ranks
)
SELECT t.run, t.rank, t.timeline_id, COALESCE(c.reference_rank, t.rank) AS reference_rank,
       c.offset_via_rank AS via_rank, COALESCE(c.offset_ns, 0) AS offset_ns,
       COALESCE(c.offset_spread_ns, 0) AS spread_ns,
       COALESCE(c.offset_collectives, 0) AS n_collectives,
       CASE WHEN c.rank IS NULL THEN 'none' WHEN c.offset_via_rank IS NULL THEN 'reference'
            ELSE 'collective_end_median' END AS method
FROM rank_traces t LEFT JOIN c ON c.run = t.run AND c.rank = t.rank
WHERE t.run IS NOT NULL;

-- collective_skew: per collective instance, how its ranks arrived.
--   n_ranks: ranks with a call in it; group_size: the ranks its process group has;
--   complete: every rank of the group is there; consistent: they agree on collective
--   name and dtype (false hints that 'order' matching paired different calls; bytes may
--   differ, as in all_to_all with uneven splits);
--   first_arrival_ns / last_arrival_ns: earliest / latest aligned start; skew_ns = last -
--   first; first_rank / last_rank (ties: the lowest rank); end_skew_ns: latest minus
--   earliest aligned end (what clock alignment leaves);
--   comm_ns: the shortest duration across ranks (the last rank's kernel: the time the data
--   moved, without waiting); bytes: the largest message of its ranks;
--   algbw_gbps = bytes / comm_ns (GB/s, 10^9 B/s); busbw_gbps = algbw x the nccl-tests
--   factor for n = group_size: AllReduce 2(n-1)/n; AllGather, ReduceScatter, AllToAll
--   (n-1)/n; Broadcast, Reduce, SendRecv 1; others NULL; ranks: those with a call.
CREATE OR REPLACE VIEW collective_skew AS
WITH a AS (
    SELECT run, collective_id, any_value(pg) AS pg, any_value(pg_desc) AS pg_desc,
           any_value(pg_hash) AS pg_hash, min(collective) AS collective,
           any_value(kind) AS kind, any_value(match_method) AS match_method,
           any_value(match_key) AS match_key, any_value(profiler_step) AS profiler_step,
           any_value(seq_num) AS seq_num, count(*) AS n_ranks,
           COALESCE(max(group_size), count(*)) AS group_size,
           count(DISTINCT COALESCE(collective, kernel)) = 1
               AND count(DISTINCT dtype) <= 1 AS consistent,
           min(start_ns) AS first_arrival_ns, max(start_ns) AS last_arrival_ns,
           arg_min(rank, [start_ns, rank]) AS first_rank,
           any_value(rank) FILTER (WHERE late_order = 1) AS last_rank,
           max(end_ns) - min(end_ns) AS end_skew_ns,
           min(dur_ns) AS comm_ns, max(bytes) AS bytes, list(rank ORDER BY rank) AS ranks
    FROM _arrivals GROUP BY run, collective_id
)
SELECT run, collective_id, pg, pg_desc, pg_ranks, collective, kind, match_method, match_key,
       profiler_step, seq_num, n_ranks, group_size, n_ranks >= group_size AS complete,
       consistent, first_arrival_ns, last_arrival_ns,
       last_arrival_ns - first_arrival_ns AS skew_ns, first_rank, last_rank, end_skew_ns,
       comm_ns, bytes, round(bytes / nullif(comm_ns, 0), 3) AS algbw_gbps,
       round(bytes / nullif(comm_ns, 0)
             * CASE WHEN kind = 'AllReduce' THEN 2.0 * (group_size - 1) / group_size
                    WHEN kind IN ('AllGather', 'ReduceScatter', 'AllToAll')
                    THEN 1.0 * (group_size - 1) / group_size
                    WHEN kind IN ('Broadcast', 'Reduce', 'SendRecv') THEN 1.0 END, 3)
           AS busbw_gbps,
       ranks
FROM a LEFT JOIN _pg_ranks USING (pg_hash);

-- collective_unmatched: what could not be matched across ranks, and why: every collective
-- instance with fewer ranks than its process group (ranks: those with a call; missing:
-- ranks of the group without one), and every point-to-point call.
--   reason: 'rank N has no trace in this run' | 'the trace of rank N has no matching
--   call (it ends early, or its calls differ)' | 'k of its n ranks have it (...)' where
--   the traces do not name the group's ranks | 'point-to-point (send/recv): not matched
--   across ranks'.
CREATE OR REPLACE VIEW collective_unmatched AS
WITH s AS (
    SELECT run, collective_id, any_value(pg) AS pg, any_value(pg_hash) AS pg_hash,
           min(collective) AS collective, any_value(kind) AS kind,
           any_value(match_method) AS match_method, any_value(match_key) AS match_key,
           any_value(profiler_step) AS profiler_step, count(*) AS n_ranks,
           COALESCE(max(group_size), count(*)) AS group_size, list(rank ORDER BY rank) AS ranks
    FROM _collective_ranks GROUP BY run, collective_id
), u AS (
    SELECT s.*, p.pg_ranks FROM s LEFT JOIN _pg_ranks p USING (pg_hash)
    WHERE n_ranks < group_size OR match_method = 'p2p'
), want AS (
    SELECT run, collective_id, ranks, unnest(TRY_CAST(pg_ranks AS INTEGER[])) AS rank FROM u
), miss AS (
    SELECT w.run, w.collective_id, list(w.rank ORDER BY w.rank) AS missing,
           list(w.rank ORDER BY w.rank) FILTER (WHERE t.rank IS NULL) AS no_trace
    FROM want w
    LEFT JOIN (SELECT DISTINCT run, rank FROM rank_traces WHERE run IS NOT NULL) t
      ON t.run = w.run AND t.rank = w.rank
    WHERE NOT list_contains(w.ranks, w.rank)
    GROUP BY w.run, w.collective_id
)
SELECT u.run, u.collective_id, u.pg, u.pg_ranks, u.collective, u.kind, u.match_method,
       u.match_key, u.profiler_step, u.n_ranks, u.group_size, u.ranks,
       COALESCE(m.missing, []) AS missing,
       CASE WHEN u.match_method = 'p2p'
            THEN 'point-to-point (send/recv): not matched across ranks'
            WHEN len(m.no_trace) > 0
            THEN 'rank' || CASE WHEN len(m.no_trace) > 1 THEN 's ' ELSE ' ' END
                 || array_to_string(m.no_trace, ', ') || ' ha'
                 || CASE WHEN len(m.no_trace) > 1 THEN 've' ELSE 's' END
                 || ' no trace in this run'
            WHEN m.missing IS NULL
            THEN u.n_ranks || ' of its ' || u.group_size || ' ranks have it (its process '
                 || 'group''s ranks are not recorded)'
            WHEN len(m.missing) = 1
            THEN 'the trace of rank ' || m.missing[1] || ' has no matching call '
                 || '(it ends early, or its calls differ)'
            ELSE 'the traces of ranks ' || COALESCE(array_to_string(m.missing, ', '), '?')
                 || ' have no matching call (they end early, or their calls differ)'
       END AS reason
FROM u LEFT JOIN miss m USING (run, collective_id);
