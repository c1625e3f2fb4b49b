-- Who made the others wait: late arrivals, each rank's waiting, the stragglers, and the
-- compiled node that issued each collective.

-- _first_attachment: per measured event attached to a compiled node (kernel_attachments),
-- the node of its first candidate (of an ambiguous call: the lowest graph timeline). Read
-- only where an output-code timeline is: every attachment's graph is one, and a database
-- without any (traces alone, as at a thousand ranks) then skips kernel_attachments'
-- launches and CPU ops (a second at 1,024 ranks) for the none it would find.
CREATE OR REPLACE VIEW _first_attachment AS
SELECT timeline_id, seq, min(graph_timeline_id) AS graph_timeline_id,
       arg_min(step, graph_timeline_id) AS step, arg_min(node, graph_timeline_id) AS node
FROM kernel_attachments
WHERE graph_timeline_id IN (SELECT timeline_id FROM _output_timelines)
GROUP BY timeline_id, seq;

-- late_arrivals: per collective instance with two or more ranks, its last rank and the
-- work that ran on that rank's GPU just before it arrived.
--   late_ns: last arrival minus the one before it (how much later than everyone else);
--   wait_caused_ns: the others' wait for it, sum of (last arrival - their arrival);
--   before_seq / before_kernel / before_end_ts_ns: the compute kernel (any stream of its
--   device) that ended last at or before the collective kernel started, in its trace;
--   graph_timeline_id / step / node: the compiled node that kernel is attached to
--   (kernel_attachments; of an ambiguous call, the first candidate), where attached.
CREATE OR REPLACE VIEW late_arrivals AS
WITH a AS MATERIALIZED (
    SELECT * FROM _arrivals WHERE n_ranks > 1
), w AS (
    SELECT run, collective_id, CAST(sum(last_arrival_ns - start_ns) AS BIGINT) AS wait_caused_ns,
           max(last_arrival_ns) - max(start_ns) FILTER (WHERE late_order > 1) AS late_ns
    FROM a GROUP BY run, collective_id
), l AS (
    SELECT * FROM a WHERE late_order = 1
), k AS (
    SELECT timeline_id, device, seq, name, end_ns FROM gpu_activity
    WHERE category = 'kernel' AND timeline_id IN (SELECT timeline_id FROM l)
), b AS (
    SELECT l.*, k.seq AS before_seq, k.name AS before_kernel, k.end_ns AS before_end_ts_ns
    FROM l ASOF LEFT JOIN k
      ON k.timeline_id = l.timeline_id AND k.device IS NOT DISTINCT FROM l.device
     AND l.ts_ns >= k.end_ns
)
SELECT b.run, b.collective_id, b.rank, b.timeline_id, b.seq, b.kernel, b.start_ns, w.late_ns,
       w.wait_caused_ns, b.before_seq, b.before_kernel, b.before_end_ts_ns,
       ka.graph_timeline_id, ka.step, ka.node
FROM b JOIN w USING (run, collective_id)
LEFT JOIN _first_attachment ka ON ka.timeline_id = b.timeline_id AND ka.seq = b.before_seq;

-- rank_wait: per rank, its time waiting for others in collectives.
--   wait_ns: sum over its collectives with two or more ranks of (latest arrival - its own
--   arrival); mean_wait_ns, max_wait_ns; times_last: collectives it arrived last at;
--   n_collectives: its matched collectives (two or more ranks); late_nodes: the compiled
--   nodes (else kernels) that ran just before its late arrivals (late_arrivals), most
--   frequent first.
CREATE OR REPLACE VIEW rank_wait AS
WITH w AS (
    SELECT run, rank, any_value(timeline_id) AS timeline_id, count(*) AS n_collectives,
           CAST(sum(last_arrival_ns - start_ns) AS BIGINT) AS wait_ns,
           CAST(avg(last_arrival_ns - start_ns) AS BIGINT) AS mean_wait_ns,
           max(last_arrival_ns - start_ns) AS max_wait_ns,
           count(*) FILTER (WHERE late_order = 1) AS times_last
    FROM _arrivals WHERE n_ranks > 1 GROUP BY run, rank
), n AS (
    SELECT run, rank, list(what ORDER BY times DESC, what) AS late_nodes FROM (
        SELECT run, rank, COALESCE(node, before_kernel) AS what, count(*) AS times
        FROM late_arrivals WHERE COALESCE(node, before_kernel) IS NOT NULL
        GROUP BY run, rank, COALESCE(node, before_kernel))
    GROUP BY run, rank
)
SELECT w.run, w.rank, w.timeline_id, w.n_collectives, w.wait_ns, w.mean_wait_ns,
       w.max_wait_ns, w.times_last, COALESCE(n.late_nodes, []) AS late_nodes
FROM w LEFT JOIN n USING (run, rank);

-- stragglers: per rank, the wait its late arrivals caused the others, worst first.
--   caused_wait_ns: over the collectives it arrived last at, the sum of (its arrival -
--   each other rank's arrival); every collective's wait is caused by its last rank, so
--   sum(caused_wait_ns) = sum(rank_wait.wait_ns) per run; delay_ns: sum of how much later
--   than the rank before it it arrived (late_arrivals.late_ns); times_last, n_collectives
--   (with two or more ranks); step_ns: the run's profiled time per rank (the mean over its
--   ranks of their ProfilerSteps' summed CPU durations; without ProfilerSteps, of their
--   collective kernels' extent); step_basis: what step_ns is: profiler_steps (every rank
--   has ProfilerSteps) | collectives_span (none has: the share is of the span of the
--   collective kernels, not of a step) | mixed; wait_share: caused_wait_ns /
--   ((n_ranks - 1) x step_ns), the share of the other ranks' step_ns spent waiting for it;
--   caused_wait_order: 1 = the rank that caused the most wait, 2 the next... (ties: the
--   lower rank): an order, not a rank id (rank is the rank); straggler_rank: the same
--   order under its name before 2026-11, kept for queries written then.
CREATE OR REPLACE VIEW stragglers AS
WITH a AS MATERIALIZED (
    SELECT run, collective_id, rank, timeline_id, start_ns, last_arrival_ns, late_order
    FROM _arrivals WHERE n_ranks > 1
), inst AS (
    SELECT run, collective_id, any_value(rank) FILTER (WHERE late_order = 1) AS last_rank,
           sum(last_arrival_ns - start_ns) AS wait_ns,
           max(last_arrival_ns) - max(start_ns) FILTER (WHERE late_order > 1) AS late_ns
    FROM a GROUP BY run, collective_id
), caused AS (
    SELECT run, last_rank AS rank, count(*) AS times_last,
           CAST(sum(wait_ns) AS BIGINT) AS caused_wait_ns, CAST(sum(late_ns) AS BIGINT) AS delay_ns
    FROM inst GROUP BY run, last_rank
), per_rank AS (
    SELECT run, rank, any_value(timeline_id) AS timeline_id, count(*) AS n_collectives
    FROM a GROUP BY run, rank
), steps AS (
    SELECT timeline_id, sum(dur_ns) AS step_ns FROM profiler_steps
    WHERE timeline_id IN (SELECT timeline_id FROM per_rank) GROUP BY timeline_id
), span AS (
    SELECT t.run, avg(COALESCE(st.step_ns, t.last_ns - t.first_ns)) AS step_ns,
           count(*) AS n_ranks,
           CASE count(st.step_ns) WHEN count(*) THEN 'profiler_steps'
                                  WHEN 0 THEN 'collectives_span' ELSE 'mixed' END AS step_basis
    FROM rank_traces t LEFT JOIN steps st USING (timeline_id)
    WHERE t.run IS NOT NULL GROUP BY t.run
), o AS (
    SELECT p.run, p.rank, p.timeline_id, p.n_collectives, COALESCE(c.times_last, 0) AS times_last,
           COALESCE(c.caused_wait_ns, 0) AS caused_wait_ns, COALESCE(c.delay_ns, 0) AS delay_ns,
           row_number() OVER (PARTITION BY p.run
                              ORDER BY COALESCE(c.caused_wait_ns, 0) DESC, p.rank)
               AS caused_wait_order
    FROM per_rank p LEFT JOIN caused c USING (run, rank)
)
SELECT o.run, o.rank, o.timeline_id, o.n_collectives, o.times_last, o.caused_wait_ns,
       o.delay_ns, CAST(sp.step_ns AS BIGINT) AS step_ns,
       round(o.caused_wait_ns / nullif((sp.n_ranks - 1) * sp.step_ns, 0), 4) AS wait_share,
       o.caused_wait_order AS straggler_rank, sp.step_basis, o.caused_wait_order
FROM o JOIN span sp USING (run);

-- collective_nodes: per collective instance and rank, the compiled node that issued it,
-- where the rank's trace is attached to its output code (kernel_attachments: the NCCL
-- kernel through the CPU op that launched it) and, where the output code is paired with
-- the scheduler IR of the same compile, the IR node (_ir_wrapper_steps).
--   graph_timeline_id / step / node: the output-code node (of an ambiguous call, the
--   first candidate); ir_timeline_id / ir_step / ir_node: the scheduler-IR node
--   (_CollectiveKernel), NULL where there is none.
CREATE OR REPLACE VIEW collective_nodes AS
WITH ka AS (
    SELECT * FROM _first_attachment
), ir AS (
    SELECT wrapper_timeline_id, wrapper_step, min(timeline_id) AS ir_timeline_id,
           arg_min(step, timeline_id) AS ir_step, arg_min(node, timeline_id) AS ir_node
    FROM _ir_wrapper_steps WHERE all_agree GROUP BY wrapper_timeline_id, wrapper_step
)
SELECT c.run, c.collective_id, c.rank, c.timeline_id, c.seq, c.collective, c.match_key,
       ka.graph_timeline_id, ka.step, ka.node, ir.ir_timeline_id, ir.ir_step, ir.ir_node
FROM _collective_ranks c
JOIN ka ON ka.timeline_id = c.timeline_id AND ka.seq = c.seq
LEFT JOIN ir ON ir.wrapper_timeline_id = ka.graph_timeline_id AND ir.wrapper_step = ka.step;
