-- What the stragglers cost: each step replayed without their lateness.

-- whatif_stragglers: per run, ProfilerStep and rank that arrived last at some collective of
-- the step, what the step would have taken had that rank's late arrivals been on time.
--   The model replays the step's collectives in order of their real start, one after
--   another (as on one communication stream). Each rank is ready for a collective when the
--   compute kernel that ended last before its collective kernel started (any stream of its
--   device) ended, else when it arrived. A collective starts when its last rank is ready
--   and the collective before it has ended (the step's first collective: when its ranks
--   really arrived); it lasts as long as it really did (its last arrival to its last end).
--   A rank's work is taken to have waited for an earlier collective of the step that ended
--   before its ready time if that collective is the previous one, or if the rank's GPU ran
--   no compute kernel when its kernel of that collective ended (its compute was held up:
--   a CUDA graph's kernels after a reduce-scatter, eager compute after a wait_tensor); its
--   ready time moves with the end of the latest such collective; work that waited for none
--   (it ran while the rank waited) stays where it was. Rank X's arrival is never later than
--   the others' latest: its late arrivals are on time.
--   measured_ns: the step's time, the longest over the run's ranks of the step's GPU
--   extent (step_totals' gpu_first_ns to gpu_last_ns, read from _step_gpu_extent: first
--   start to last end of the GPU work its ProfilerStep launched); saved_ns: how much
--   earlier the step's last collective ends in the replay than really (the work after it
--   moves with it); modelled_ns = measured_ns - saved_ns;
--   slowest_rank: the rank whose extent is measured_ns; n_late: the collectives of the
--   step X was last at.
--   Limits: one sequence of collectives per step (process groups and streams run one after
--   another); a rank's compute is never shortened, only its waiting (so a rank late
--   because its own compute is slow saves only what it waited beyond the others); a
--   collective's duration is kept (a collective that was slow because of another rank's
--   lateness inside it is not shortened).
CREATE OR REPLACE VIEW whatif_stragglers AS
WITH RECURSIVE ar AS MATERIALIZED (  -- _arrivals once, with the instance's step
    SELECT run, collective_id, rank, timeline_id, device, ts_ns, dur_ns, start_ns, end_ns,
           late_order, n_ranks,
           any_value(profiler_step) OVER (PARTITION BY run, collective_id) AS step
    FROM _arrivals
), rd AS (  -- every rank of every collective of a step, with ready
    SELECT r.*, r.start_ns - (r.ts_ns - COALESCE(k.end_ns, r.ts_ns)) AS ready_ns
    FROM ar r
    ASOF LEFT JOIN (SELECT timeline_id, device, end_ns FROM gpu_activity
                    WHERE category = 'kernel') k
      ON k.timeline_id = r.timeline_id AND k.device IS NOT DISTINCT FROM r.device
     AND r.ts_ns >= k.end_ns
    WHERE r.step IS NOT NULL AND r.n_ranks > 1
), c0 AS (  -- idle_end: no compute kernel of its device ran when its collective kernel ended
    SELECT r.run, r.collective_id, r.rank, r.start_ns, r.end_ns, r.step, r.late_order,
           r.ready_ns, i.e IS NULL OR i.e <= r.ts_ns + r.dur_ns AS idle_end
    FROM rd r
    ASOF LEFT JOIN (SELECT timeline_id, device, s, e FROM _islands WHERE class = 'compute') i
      ON i.timeline_id = r.timeline_id AND i.device IS NOT DISTINCT FROM r.device
     AND r.ts_ns + r.dur_ns > i.s
), coll AS (
    SELECT run, step, collective_id, min(start_ns) AS first_ns, max(start_ns) AS start_ns,
           max(end_ns) AS end_ns,
           row_number() OVER (PARTITION BY run, step ORDER BY max(start_ns), collective_id)
               AS k
    FROM c0 GROUP BY run, step, collective_id
), c AS MATERIALIZED (  -- idle_ks: the collectives of the step (by k) its rank idled at the end of
    SELECT c0.*, n.k, i.idle_ks
    FROM c0 JOIN coll n USING (run, step, collective_id)
    JOIN (SELECT c0.run, c0.step, c0.rank,
                 COALESCE(list(n.k) FILTER (WHERE c0.idle_end), []) AS idle_ks
          FROM c0 JOIN coll n USING (run, step, collective_id) GROUP BY ALL) i
      USING (run, step, rank)
), late AS (  -- as late_arrivals: the last rank, late_ns > 0
    SELECT run, step, x, count(*) AS n_late
    FROM (SELECT run, step, collective_id, any_value(rank) FILTER (WHERE late_order = 1) AS x,
                 max(start_ns) - max(start_ns) FILTER (WHERE late_order > 1) AS late_ns
          FROM c GROUP BY run, step, collective_id)
    WHERE late_ns > 0
    GROUP BY ALL
), cj AS (  -- per rank and k-th collective (k > 1): the earlier collectives that ended
            -- before its ready time and that it waited for (the previous one, or one its
            -- compute idled at the end of), by their real end
    SELECT c.run, c.step, c.rank, c.k, n.end_ns, list(n.k ORDER BY n.k) AS js
    FROM c JOIN coll n ON n.run = c.run AND n.step = c.step AND n.k < c.k
    WHERE n.end_ns < c.ready_ns AND (n.k = c.k - 1 OR list_contains(c.idle_ks, n.k))
    GROUP BY ALL
), moves AS (  -- its ready time moves with the latest of them (ties: the one moved most)
    SELECT run, step, rank, k, arg_max(js, end_ns) AS js FROM cj GROUP BY ALL
), r AS (  -- base_ns: its arrival in the replay before that move (the step's first
            -- collective: when it really arrived)
    SELECT c.run, c.step, c.k, c.rank,
           CASE WHEN c.k = 1 THEN c.start_ns ELSE c.ready_ns END AS base_ns,
           CASE WHEN c.k = 1 THEN [] ELSE COALESCE(m.js, []) END AS js
    FROM c LEFT JOIN moves m USING (run, step, rank, k)
), grp AS (  -- the ranks of a collective that move alike: their two latest (rank X,
             -- replayed on time, counts only with itself)
    SELECT run, step, k, js, max(base_ns) FILTER (WHERE o = 1) AS top1,
           any_value(rank) FILTER (WHERE o = 1) AS top1_rank,
           max(base_ns) FILTER (WHERE o = 2) AS top2
    FROM (SELECT *, row_number() OVER (PARTITION BY run, step, k, js
                                       ORDER BY base_ns DESC, rank) AS o FROM r)
    WHERE o <= 2 GROUP BY ALL
), steps AS (  -- per step, as lists the replay carries (a CTE it joined would be computed
               -- again at each of its steps): the collectives by k, their groups, and X's
               -- own arrivals before their move
    SELECT n.run, n.step, n.colls, g.groups
    FROM (SELECT run, step, list({'start_ns': start_ns, 'end_ns': end_ns} ORDER BY k) AS colls
          FROM coll GROUP BY run, step) n
    JOIN (SELECT run, step, list({'k': k, 'js': js, 'top1': top1, 'top1_rank': top1_rank,
                                  'top2': top2}) AS groups
          FROM grp GROUP BY run, step) g USING (run, step)
), xr AS (
    SELECT l.run, l.step, l.x, list({'k': r.k, 'base_ns': r.base_ns, 'js': r.js}) AS own
    FROM late l JOIN r ON r.run = l.run AND r.step = l.step AND r.rank = l.x
    GROUP BY l.run, l.step, l.x
), replay(run, step, x, k, end_ns, end2_ns, shifts, colls, groups, own) AS (
    -- end_ns / end2_ns: the k-th collective's real end and its end in the replay; shifts:
    -- real end - replayed end of the collectives 1..k, in order
    SELECT l.run, l.step, l.x, 0, NULL::BIGINT, NULL::BIGINT, []::BIGINT[], s.colls, s.groups,
           COALESCE(o.own, [])
    FROM late l JOIN steps s USING (run, step) LEFT JOIN xr o USING (run, step, x)
    UNION ALL
    SELECT run, step, x, k, end_ns, end2_ns, list_append(shifts, end_ns - end2_ns), colls,
           groups, own
    FROM (
        SELECT run, step, x, k + 1 AS k, colls[k + 1].end_ns AS end_ns, shifts, colls, groups,
               own,
               CAST(greatest(others, least(arrive, others), end2_ns) AS BIGINT)
               + (colls[k + 1].end_ns - colls[k + 1].start_ns) AS end2_ns
        FROM (
            -- a ready time moves with the shift of the collective it moves with; others:
            -- the latest of the ranks but X, arrive: X's own
            SELECT *,
                   list_max(list_transform(
                       list_filter(groups, lambda g: g.k = k + 1),
                       lambda g: CASE WHEN g.top1_rank = x THEN g.top2 ELSE g.top1 END
                                 - COALESCE(list_max(list_transform(
                                       g.js, lambda j: shifts[j])), 0))) AS others,
                   list_max(list_transform(
                       list_filter(own, lambda o: o.k = k + 1),
                       lambda o: o.base_ns - COALESCE(list_max(list_transform(
                                     o.js, lambda j: shifts[j])), 0))) AS arrive
            FROM replay WHERE k < len(colls)))
), saved AS (
    SELECT run, step, x, arg_max(end_ns - end2_ns, k) AS saved_ns
    FROM replay WHERE k > 0 GROUP BY ALL
), ext AS (
    SELECT t.run, st.step, t.rank, st.gpu_last_ns - st.gpu_first_ns AS extent_ns
    FROM _step_gpu_extent st JOIN rank_traces t USING (timeline_id)
    WHERE t.run IS NOT NULL
), m AS (
    SELECT run, step, max(extent_ns) AS measured_ns,
           arg_max(rank, [extent_ns, -rank]) AS slowest_rank
    FROM ext GROUP BY run, step
)
SELECT l.run, l.step, l.x AS rank, l.n_late, CAST(s.saved_ns AS BIGINT) AS saved_ns,
       m.measured_ns, m.measured_ns - s.saved_ns AS modelled_ns, m.slowest_rank
FROM late l JOIN saved s USING (run, step, x) JOIN m USING (run, step);
