-- Many ranks: the same collective across the ranks' profiler traces, clock alignment,
-- arrival skew, waits and stragglers. One profiler trace is one rank (Kineto's
-- distributedInfo.rank, else the Rank of its record_param_comms events).
--
-- These views read only other views (timelines, measured, gpu_activity, profiler_steps,
-- kernel_attachments), never the tables, so that they run unchanged over any store that
-- provides those views.
--
-- Times. A Kineto trace's ts is microseconds after its baseTimeNanoseconds (Unix time),
-- so base_ns + ts_ns is the rank's own clock in Unix nanoseconds. Each rank's clock has
-- its own offset; clock_offsets estimates it from the collectives themselves and the
-- views below subtract it: start_ns / end_ns are aligned times (Unix ns on the reference
-- rank's clock), ts_ns stays the trace's own (as in every other view).
--
-- Runs. Traces of one job run share its world size and were recorded at the same time.
-- A run is a set of traces of one world size whose collective kernels' spans (own clocks,
-- Unix time) overlap or lie within 10 s of one another; two traces of the same rank in
-- one such set are told apart by order of start: the k-th trace of every rank is run k
-- of the set (a rank ingested twice, or two jobs of one size recorded together).
--
-- Matching. Every NCCL/RCCL kernel (ncclDevKernel_*, ncclKernel_*, rccl*) is one
-- collective call of its rank; its collective name, process group (name, description,
-- ranks), message sizes, dtype and sequence number come from the kernel's own args, else
-- from the record_param_comms event of the same External id. Calls of different ranks
-- are the same collective when they agree on run and process group (name and ranks:
-- never across process groups) and on, per process group, the first method that every
-- call of the group allows:
--   'seq'        the sequence number torch records (args.Seq, newer torch), and the
--                order among calls of that number;
--   'step_order' the collective name, the ProfilerStep whose CPU range launched it, and
--                its order among calls of that name and group in that step;
--   'order'      the collective name and its order among calls of that name and group.
-- Point-to-point calls (send/recv) are never matched (collective_unmatched lists them).

-- The caches. What the views below derive from the events is kept by the store in
-- tables once the database holds a run of two or more traces (store/caches.py: rebuilt
-- whole, inside the ingest's transaction, whenever an ingest adds a profiler trace; the
-- matching spans every rank): _cache_rank_traces (_rank_traces_derived),
-- _cache_pg_ranks (_pg_ranks_derived) and _cache_arrivals (_arrivals_derived), which
-- rank_traces, _pg_ranks, _arrivals and _collective_ranks read, so that every view and
-- query of the ranks reads the matching instead of deriving it again (seconds at a
-- thousand ranks). Until then (a trace alone, which the matching has nothing to match
-- for; a shard set read in place) each is a view of its derivation.

-- _rank_traces_derived: rank_traces (below), computed from the events.
CREATE OR REPLACE VIEW _rank_traces_derived AS
WITH t AS (
    SELECT timeline_id, name, source_path,
           TRY_CAST(json_extract(attrs, '$.rank') AS INTEGER) AS info_rank,
           TRY_CAST(json_extract(attrs, '$.world_size') AS INTEGER) AS info_world,
           COALESCE(TRY_CAST(json_extract(attrs, '$.baseTimeNanoseconds') AS BIGINT), 0)
               AS base_ns
    FROM timelines WHERE format IN ('kineto', 'jax_trace')
), calls AS (  -- only for traces without distributedInfo: the JSON is read where needed
    SELECT timeline_id, min(TRY_CAST(json_extract(attrs, '$.args.Rank') AS INTEGER)) AS call_rank,
           max(TRY_CAST(json_extract(attrs, '$.args."Group size"') AS INTEGER)) AS call_world
    FROM measured
    WHERE category = 'comm_call'
      AND timeline_id IN (SELECT timeline_id FROM t WHERE info_rank IS NULL OR info_world IS NULL)
    GROUP BY timeline_id
), k AS (
    SELECT timeline_id, count(*) AS n_collectives, min(ts_ns) AS first_ts, max(end_ns) AS last_ts
    FROM gpu_activity WHERE category = 'comm' GROUP BY timeline_id
), r AS (
    SELECT t.timeline_id, t.name, t.source_path, COALESCE(t.info_rank, c.call_rank) AS rank,
           COALESCE(t.info_world, c.call_world) AS world_size, t.base_ns,
           COALESCE(k.n_collectives, 0) AS n_collectives,
           t.base_ns + k.first_ts AS first_ns, t.base_ns + k.last_ts AS last_ns
    FROM t LEFT JOIN calls c USING (timeline_id) LEFT JOIN k USING (timeline_id)
    WHERE COALESCE(t.info_rank, c.call_rank) IS NOT NULL
), o AS (
    SELECT *, max(last_ns) OVER (PARTITION BY world_size ORDER BY first_ns, timeline_id
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_last
    FROM r WHERE first_ns IS NOT NULL
), isl AS (
    SELECT *, sum(CASE WHEN prev_last IS NULL OR first_ns > prev_last + 10000000000
                       THEN 1 ELSE 0 END)
                  OVER (PARTITION BY world_size ORDER BY first_ns, timeline_id
                        ROWS UNBOUNDED PRECEDING) AS island
    FROM o
), cp AS (
    SELECT *, row_number() OVER (PARTITION BY world_size, island, rank
                                 ORDER BY first_ns, timeline_id) AS copy,
           min(first_ns) OVER (PARTITION BY world_size, island) AS island_first
    FROM isl
), runs AS (
    SELECT timeline_id, copy,
           dense_rank() OVER (ORDER BY island_first, world_size, island, copy) AS run
    FROM cp
)
SELECT r.timeline_id, runs.run, r.rank, r.world_size, r.name, r.source_path, r.base_ns,
       r.n_collectives, r.first_ns, r.last_ns,
       CASE WHEN r.first_ns IS NULL THEN 'no_collectives'
            WHEN r.rank < 0 OR r.rank >= r.world_size THEN 'rank_out_of_range'
            WHEN runs.copy > 1 THEN 'duplicate' ELSE 'ok' END AS status
FROM r LEFT JOIN runs USING (timeline_id);

CREATE VIEW IF NOT EXISTS _cache_rank_traces AS SELECT * FROM _rank_traces_derived;

-- rank_traces: each profiler trace that names a distributed rank, and its run.
--   rank: distributedInfo.rank, else the Rank its record_param_comms events state;
--   world_size: distributedInfo.world_size, else the largest group size of its calls;
--   base_ns: the trace's baseTimeNanoseconds (0 when absent); n_collectives: its
--   NCCL/RCCL kernels; first_ns / last_ns: their extent on the trace's own clock, Unix ns;
--   run: see Runs above (NULL: no collective kernel, so no run can be told);
--   status: ok | duplicate (another trace of this rank overlaps it: a run of its own) |
--   rank_out_of_range (rank >= world_size) | no_collectives.
CREATE OR REPLACE VIEW rank_traces AS
SELECT * FROM _cache_rank_traces;

-- rank_runs: per run, which ranks it holds and which it lacks.
--   ranks / missing: the ranks with a trace / those of 0 .. world_size-1 without one;
--   duplicates: traces in it that were split off another run (status duplicate);
--   first_ns / last_ns: the extent of its traces' collective kernels (own clocks, Unix ns).
CREATE OR REPLACE VIEW rank_runs AS
WITH r AS (
    SELECT run, any_value(world_size) AS world_size, count(*) AS n_traces,
           list(rank ORDER BY rank) AS ranks,
           count(*) FILTER (WHERE status = 'duplicate') AS duplicates,
           min(first_ns) AS first_ns, max(last_ns) AS last_ns
    FROM rank_traces WHERE run IS NOT NULL GROUP BY run
), m AS (
    SELECT r.run, list(i ORDER BY i) AS missing
    FROM r, (SELECT unnest(generate_series(0, max(world_size) - 1)) AS i FROM r) g
    WHERE g.i < r.world_size
      AND NOT EXISTS (SELECT 1 FROM rank_traces t WHERE t.run = r.run AND t.rank = g.i)
    GROUP BY r.run
)
SELECT r.run, r.world_size, r.n_traces, r.ranks, COALESCE(m.missing, []) AS missing,
       r.duplicates, r.first_ns, r.last_ns
FROM r LEFT JOIN m USING (run);
