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

-- _pg_ranks: each process group's ranks as torch records them (text), by the hash that
-- the matching carries in their place: at 1,024 ranks the text is ~5 KB on every call,
-- and carried through the matching's joins, windows and materialized steps it took the
-- ingest's rank report over 1 GB of DuckDB buffers for 24,576 calls (out of memory under
-- the ingest's 256MB). The public views join it back last.
-- _trace_pg: per profiler trace whose distributedInfo names exactly one process group
-- (pg_config of one entry), that group: a collective kernel with no collective record of
-- its own (one replayed by a CUDA graph: its cudaGraphLaunch has no record_param_comms
-- beside it) belongs to it. pg_ranks: its ranks written as torch writes a record's
-- "Process Group Ranks" ('[0, 1]').
CREATE OR REPLACE VIEW _trace_pg AS
SELECT timeline_id, json_extract_string(g, '$.pg_name') AS pg,
       json_extract_string(g, '$.pg_desc') AS pg_desc,
       '[' || array_to_string(from_json(json_extract(g, '$.ranks'), '["BIGINT"]'), ', ') || ']'
           AS pg_ranks,
       TRY_CAST(json_extract(g, '$.pg_size') AS INTEGER) AS group_size
FROM (SELECT timeline_id, json_extract(attrs, '$.distributedInfo.pg_config[0]') AS g
      FROM timelines
      WHERE format IN ('kineto', 'jax_trace')
        AND json_array_length(json_extract(attrs, '$.distributedInfo.pg_config')) = 1);

-- _pg_ranks_derived: _pg_ranks computed from the events (cached with the matching, so
-- that the hashes the cache holds and their texts come from one computation).
CREATE OR REPLACE VIEW _pg_ranks_derived AS
SELECT DISTINCT hash(r) AS pg_hash, r AS pg_ranks
FROM (SELECT json_extract_string(attrs, '$.args."Process Group Ranks"') AS r
      FROM measured WHERE category IN ('comm', 'comm_call')
      UNION ALL
      SELECT pg_ranks FROM _trace_pg);

CREATE VIEW IF NOT EXISTS _cache_pg_ranks AS SELECT * FROM _pg_ranks_derived;

CREATE OR REPLACE VIEW _pg_ranks AS
SELECT * FROM _cache_pg_ranks;

-- _comm_args: a collective record's args (a kernel's or its record_param_comms event's),
-- read in one JSON pass: [collective name, group name, group description, group ranks,
-- group size, in msg nelems, out msg nelems, dtype, Seq].
CREATE OR REPLACE MACRO _comm_args(attrs) AS
json_extract_string(attrs, ['$.args."Collective name"', '$.args."Process Group Name"',
    '$.args."Process Group Description"', '$.args."Process Group Ranks"',
    '$.args."Group size"', '$.args."In msg nelems"', '$.args."Out msg nelems"',
    '$.args.dtype', '$.args.Seq']);

-- _rank_calls: every collective kernel of a rank trace with what its collective record
-- says, its ProfilerStep and its match key (see Matching above).
--   launch_ns: when its runtime call launched it (else its record_param_comms ran, else
--   its start); kind: AllReduce | AllGather | ReduceScatter | AllToAll | Broadcast |
--   Reduce | SendRecv | Barrier | NULL, from the collective name else the kernel name;
--   pg_hash: hash() of the group's ranks (text, in _pg_ranks), NULL's where not recorded.
-- The records' fields are read where they are scanned (_comm_args; a: the kernel's, b:
-- its record_param_comms event's, without the group's ranks), the ranks' text only
-- hashed: no step holds the records' JSON or that text.
CREATE OR REPLACE VIEW _rank_calls AS
WITH k AS (
    SELECT * EXCLUDE (r), r[1:3] || r[5:9] AS a, hash(r[4]) AS a_ranks, r[4] IS NULL AS a_no_ranks
    FROM (SELECT g.timeline_id, g.seq, g.name, g.device, g.stream, g.ts_ns, g.dur_ns, g.end_ns,
                 g.bytes, g.correlation,
                 TRY_CAST(json_extract(g.attrs, '$.args."External id"') AS BIGINT) AS ext,
                 _comm_args(g.attrs) AS r
          FROM gpu_activity g WHERE g.category = 'comm')
), cc AS (
    -- the record_param_comms events, where the kernels need them: traces whose kernels do
    -- not carry the collective record (older torch), and calls that hold a sequence number
    SELECT * EXCLUDE (r), r[1:3] || r[5:9] AS b, hash(r[4]) AS b_ranks, r[4] IS NULL AS b_no_ranks
    FROM (SELECT timeline_id, ext, ts_ns AS call_ns, bytes AS call_bytes,
                 _comm_args(attrs) AS r
          FROM measured
          WHERE category = 'comm_call' AND ext IS NOT NULL
            AND (attrs LIKE '%"Seq"%'
                 OR timeline_id IN (  -- a kernel without its name or group (one parse)
                     SELECT timeline_id FROM gpu_activity WHERE category = 'comm'
                       AND list_count(json_extract_string(attrs, ['$.args."Collective name"',
                               '$.args."Process Group Name"'])) < 2)))
), launch AS (
    SELECT timeline_id, correlation, min(ts_ns) AS launch_ns
    FROM measured WHERE category = 'runtime' AND correlation IS NOT NULL
    GROUP BY timeline_id, correlation
), kc AS (
    SELECT k.*, cc.call_ns, cc.call_bytes, cc.b, cc.b_ranks, cc.b_no_ranks
    FROM k LEFT JOIN cc ON cc.timeline_id = k.timeline_id AND cc.ext = k.ext
), j AS (
    -- a kernel with no group in its record, or no record: its trace's only group (_trace_pg)
    SELECT k.timeline_id, k.seq, k.name AS kernel, k.device, k.stream, k.ts_ns, k.dur_ns,
           k.end_ns, COALESCE(k.bytes, k.call_bytes) AS bytes,
           COALESCE(k.a[1], k.b[1]) AS collective, COALESCE(k.a[2], k.b[2], tp.pg) AS pg,
           CASE WHEN COALESCE(k.a[2], k.b[2]) IS NULL THEN tp.pg_desc
                ELSE COALESCE(k.a[3], k.b[3]) END AS pg_desc,
           -- hash(COALESCE(kernel's ranks, call's ranks, the trace's group's)), from hashes
           CASE WHEN NOT k.a_no_ranks THEN k.a_ranks
                WHEN NOT k.b_no_ranks THEN k.b_ranks
                WHEN COALESCE(k.a[2], k.b[2]) IS NULL THEN hash(tp.pg_ranks)
                ELSE hash(NULL::VARCHAR) END AS pg_hash,
           COALESCE(TRY_CAST(COALESCE(k.a[4], k.b[4]) AS INTEGER),
                    CASE WHEN COALESCE(k.a[2], k.b[2]) IS NULL THEN tp.group_size END)
               AS group_size,
           TRY_CAST(COALESCE(k.a[5], k.b[5]) AS BIGINT) AS in_nelems,
           TRY_CAST(COALESCE(k.a[6], k.b[6]) AS BIGINT) AS out_nelems,
           COALESCE(k.a[7], k.b[7]) AS dtype,
           TRY_CAST(COALESCE(k.a[8], k.b[8]) AS BIGINT) AS seq_num,
           COALESCE(l.launch_ns, k.call_ns, k.ts_ns) AS launch_ns
    FROM kc k
    LEFT JOIN launch l ON l.timeline_id = k.timeline_id AND l.correlation = k.correlation
    LEFT JOIN _trace_pg tp ON tp.timeline_id = k.timeline_id
), s AS (
    SELECT j.*, p.step AS profiler_step, p.end_ns AS step_end_ns
    FROM j ASOF LEFT JOIN profiler_steps p
      ON p.timeline_id = j.timeline_id AND j.launch_ns >= p.ts_ns
), c AS (
    SELECT s.* EXCLUDE (profiler_step, step_end_ns, x),
           CASE WHEN s.launch_ns < s.step_end_ns THEN s.profiler_step END AS profiler_step,
           rt.run, rt.rank, rt.base_ns,
           CASE WHEN x LIKE '%allreduce%' THEN 'AllReduce'
                WHEN x LIKE '%reducescatter%' THEN 'ReduceScatter'
                WHEN x LIKE '%allgather%' THEN 'AllGather'
                WHEN x LIKE '%alltoall%' THEN 'AllToAll'
                WHEN x LIKE '%broadcast%' THEN 'Broadcast'
                WHEN x LIKE '%barrier%' THEN 'Barrier'
                WHEN x LIKE '%sendrecv%' OR x LIKE '%send%' OR x LIKE '%recv%' THEN 'SendRecv'
                WHEN x LIKE '%reduce%' THEN 'Reduce' END AS kind
    FROM (SELECT *, lower(replace(COALESCE(collective, '') || ' ' || kernel, '_', '')) AS x
          FROM s) s
    JOIN rank_traces rt ON rt.timeline_id = s.timeline_id AND rt.run IS NOT NULL
), m AS (
    SELECT *,
           CASE WHEN kind = 'SendRecv' THEN 'p2p'
                WHEN count(seq_num) OVER g = count(*) OVER g THEN 'seq'
                WHEN count(profiler_step) OVER g = count(*) OVER g THEN 'step_order'
                ELSE 'order' END AS match_method
    FROM c
    WINDOW g AS (PARTITION BY run, pg, pg_hash)
)
SELECT *,
       row_number() OVER (
           PARTITION BY timeline_id, pg, pg_hash, match_method,
                        CASE WHEN match_method = 'seq' THEN CAST(seq_num AS VARCHAR)
                             ELSE COALESCE(collective, kind, kernel) END,
                        CASE WHEN match_method = 'step_order' THEN profiler_step END
           ORDER BY launch_ns, ts_ns, seq) AS call_order
FROM m;

-- _collective_match: the calls of _rank_calls with the instance they are matched into.
--   collective_id: one number per collective instance (run, process group, match key);
--   match_key: that key as text, e.g. 'ProfilerStep#2 allgather_into_tensor_coalesced #3'.
CREATE OR REPLACE VIEW _collective_match AS
WITH k AS (
    SELECT *,
           CASE WHEN match_method = 'seq' THEN NULL
                ELSE COALESCE(collective, kind, kernel) END AS key_name,
           CASE WHEN match_method = 'step_order' THEN profiler_step END AS key_step,
           CASE WHEN match_method = 'seq' THEN seq_num END AS key_seq,
           CASE WHEN match_method = 'p2p' THEN timeline_id END AS key_trace
    FROM _rank_calls
)
SELECT *,
       dense_rank() OVER (ORDER BY run, pg NULLS FIRST, pg_hash,
                          key_step NULLS FIRST, key_seq NULLS FIRST, key_name NULLS FIRST,
                          call_order, key_trace NULLS FIRST) AS collective_id,
       CASE match_method
            WHEN 'seq' THEN 'seq ' || key_seq || ' #' || call_order
            WHEN 'step_order' THEN 'ProfilerStep#' || key_step || ' ' || key_name || ' #' || call_order
            WHEN 'order' THEN key_name || ' #' || call_order
            ELSE key_name || ' #' || call_order || ' of rank ' || rank END AS match_key,
       base_ns + ts_ns AS own_start_ns, base_ns + end_ns AS own_end_ns
FROM k;

-- collective_ranks: per collective instance and rank, its call on that rank, on aligned
-- clocks.
--   start_ns / end_ns: aligned times (Unix ns on the reference rank's clock: base_ns +
--   ts_ns - offset_ns); ts_ns / dur_ns / seq / timeline_id: the kernel in its own trace;
--   bytes: its larger message (element count x dtype size); in_nelems / out_nelems,
--   dtype, group_size, pg (process group name), pg_desc, pg_ranks, collective (torch's
--   name), kind, seq_num (torch's sequence number, where recorded), profiler_step,
--   match_method, match_key: as above; offset_ns, reference_rank: the rank's clock offset
--   applied and the rank it is relative to (clock_offsets, which reads them from here).
-- Clock offsets are estimated here, once per query, from the matched collectives: a
-- collective ends at nearly the same moment on every rank that takes part, so a rank's
-- offset from its partner is the median of (its end - the partner's end) over the
-- collectives they share (the lower median: of an even count, the lower of the two middle
-- differences), and its offset is that plus the partner's own. The partner is the lowest
-- rank it shares a collective with (point-to-point calls aside); a rank with no lower
-- partner is a reference (offset 0): in a run with a world process group, its lowest
-- rank. Ends are own-clock Unix ns (base_ns + ts_ns + dur_ns).
CREATE OR REPLACE VIEW _collective_ranks_derived AS
WITH RECURSIVE m AS MATERIALIZED (
    SELECT * FROM _collective_match
), lowest AS (
    SELECT run, collective_id, min(rank) AS low, count(*) AS n
    FROM m WHERE match_method <> 'p2p' GROUP BY run, collective_id
), partner AS (
    SELECT m.run, m.rank, min(l.low) AS partner
    FROM m JOIN lowest l USING (run, collective_id)
    WHERE l.low < m.rank AND l.n > 1 GROUP BY m.run, m.rank
), d AS (
    SELECT a.run, a.rank, p.partner, a.own_end_ns - b.own_end_ns AS diff
    FROM m a JOIN partner p USING (run, rank)
    JOIN m b ON b.run = a.run AND b.collective_id = a.collective_id AND b.rank = p.partner
), edge AS (
    SELECT run, rank, partner, quantile_disc(diff, 0.5) AS off, count(*) AS n
    FROM d GROUP BY run, rank, partner
), spread AS (
    SELECT d.run, d.rank, quantile_disc(abs(d.diff - e.off), 0.5) AS spread_ns
    FROM d JOIN edge e USING (run, rank) GROUP BY d.run, d.rank
), chain(run, rank, offset_ns, reference_rank, depth) AS (
    SELECT r.run, r.rank, CAST(0 AS BIGINT), r.rank, 0
    FROM (SELECT DISTINCT run, rank FROM m) r
    WHERE NOT EXISTS (SELECT 1 FROM partner p WHERE p.run = r.run AND p.rank = r.rank)
    UNION ALL
    SELECT e.run, e.rank, CAST(c.offset_ns + e.off AS BIGINT), c.reference_rank, c.depth + 1
    FROM edge e JOIN chain c ON c.run = e.run AND c.rank = e.partner
    WHERE c.depth < 100000
)
SELECT m.run, m.collective_id, m.rank, m.timeline_id, m.seq, m.kernel, m.device, m.stream,
       m.ts_ns, m.dur_ns, m.own_start_ns - c.offset_ns AS start_ns,
       m.own_end_ns - c.offset_ns AS end_ns, m.bytes, m.in_nelems, m.out_nelems, m.dtype,
       m.group_size, m.pg, m.pg_desc, m.pg_hash, m.collective, m.kind, m.seq_num,
       m.profiler_step, m.match_method, m.match_key, c.offset_ns, c.reference_rank,
       e.partner AS offset_via_rank, CAST(COALESCE(s.spread_ns, 0) AS BIGINT) AS offset_spread_ns,
       COALESCE(e.n, 0) AS offset_collectives
FROM m
JOIN chain c ON c.run = m.run AND c.rank = m.rank
LEFT JOIN edge e ON e.run = m.run AND e.rank = m.rank
LEFT JOIN spread s ON s.run = m.run AND s.rank = m.rank;

-- _arrivals: collective_ranks with, per instance, its latest arrival, size and order of
-- arrival (late_order 1: the last rank; ties: the lowest rank); _arrivals_derived computes
-- it from the events (the caches: see above).
CREATE OR REPLACE VIEW _arrivals_derived AS
SELECT *, max(start_ns) OVER w AS last_arrival_ns, count(*) OVER w AS n_ranks,
       row_number() OVER (PARTITION BY run, collective_id ORDER BY start_ns DESC, rank)
           AS late_order
FROM _collective_ranks_derived
WINDOW w AS (PARTITION BY run, collective_id);

CREATE VIEW IF NOT EXISTS _cache_arrivals AS SELECT * FROM _arrivals_derived;

CREATE OR REPLACE VIEW _arrivals AS
SELECT * FROM _cache_arrivals;

-- _collective_ranks: collective_ranks with the group's ranks as their hash (pg_hash, in
-- _pg_ranks), as the views below read it.
CREATE OR REPLACE VIEW _collective_ranks AS
SELECT * EXCLUDE (last_arrival_ns, n_ranks, late_order) FROM _cache_arrivals;

-- collective_ranks, as described above: _collective_ranks (which the other views read)
-- with the group's ranks as text in place of their hash.
CREATE OR REPLACE VIEW collective_ranks AS
SELECT c.run, c.collective_id, c.rank, c.timeline_id, c.seq, c.kernel, c.device, c.stream,
       c.ts_ns, c.dur_ns, c.start_ns, c.end_ns, c.bytes, c.in_nelems, c.out_nelems, c.dtype,
       c.group_size, c.pg, c.pg_desc, p.pg_ranks, c.collective, c.kind, c.seq_num,
       c.profiler_step, c.match_method, c.match_key, c.offset_ns, c.reference_rank,
       c.offset_via_rank, c.offset_spread_ns, c.offset_collectives
FROM _collective_ranks c LEFT JOIN _pg_ranks p USING (pg_hash);

-- clock_offsets: per rank trace, the offset of its clock from its run's reference rank
-- (estimated in collective_ranks, above) and how well the collectives fix it.
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
LEFT JOIN (SELECT timeline_id, seq, min(graph_timeline_id) AS graph_timeline_id,
                  arg_min(step, graph_timeline_id) AS step,
                  arg_min(node, graph_timeline_id) AS node
           FROM kernel_attachments GROUP BY timeline_id, seq) ka
  ON ka.timeline_id = b.timeline_id AND ka.seq = b.before_seq;

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
    SELECT timeline_id, seq, min(graph_timeline_id) AS graph_timeline_id,
           arg_min(step, graph_timeline_id) AS step, arg_min(node, graph_timeline_id) AS node
    FROM kernel_attachments GROUP BY timeline_id, seq
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
--   extent (step_totals: first start to last end of the GPU work its ProfilerStep
--   launched); saved_ns: how much earlier the step's last collective ends in the replay
--   than really (the work after it moves with it); modelled_ns = measured_ns - saved_ns;
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
), replay(run, step, x, k, end_ns, end2_ns, done) AS (
    -- end_ns / end2_ns: the k-th collective's real end and its end in the replay; done: the
    -- [real end, shift = real end - replayed end, k] of the collectives 1..k
    SELECT l.run, l.step, l.x, 0, NULL::BIGINT, NULL::BIGINT, []::BIGINT[][] FROM late l
    UNION ALL
    SELECT run, step, x, k, end_ns, end2_ns, list_append(done, [end_ns, end_ns - end2_ns, k])
    FROM (
        SELECT p.run, p.step, p.x, p.k + 1 AS k, n.end_ns, p.done,
               CAST(greatest(max(a.arrive) FILTER (WHERE c.rank <> p.x),
                             least(max(a.arrive) FILTER (WHERE c.rank = p.x),
                                   max(a.arrive) FILTER (WHERE c.rank <> p.x)),
                             p.end2_ns) AS BIGINT)
               + (n.end_ns - n.start_ns) AS end2_ns
        FROM replay p
        JOIN coll n ON n.run = p.run AND n.step = p.step AND n.k = p.k + 1
        JOIN c ON c.run = n.run AND c.collective_id = n.collective_id,
        -- a ready time moves with the latest earlier collective that ended before it and
        -- that it waited for: the previous one, or one its rank's compute idled at the end of
        LATERAL (SELECT CASE WHEN p.end_ns IS NULL THEN c.start_ns  -- the step's first
                             ELSE c.ready_ns - COALESCE(list_sort(list_filter(
                                      p.done, lambda d: d[1] < c.ready_ns
                                          AND (d[3] = p.k OR list_contains(c.idle_ks, d[3]))
                                  ))[-1][2], 0)
                        END AS arrive) a
        GROUP BY p.run, p.step, p.x, p.k, n.end_ns, n.start_ns, p.end2_ns, p.done)
), saved AS (
    SELECT run, step, x, arg_max(end_ns - end2_ns, k) AS saved_ns
    FROM replay WHERE k > 0 GROUP BY ALL
), ext AS (
    SELECT t.run, st.step, t.rank, st.gpu_last_ns - st.gpu_first_ns AS extent_ns
    FROM step_totals st JOIN rank_traces t USING (timeline_id)
    WHERE t.run IS NOT NULL AND st.gpu_first_ns IS NOT NULL
), m AS (
    SELECT run, step, max(extent_ns) AS measured_ns,
           arg_max(rank, [extent_ns, -rank]) AS slowest_rank
    FROM ext GROUP BY run, step
)
SELECT l.run, l.step, l.x AS rank, l.n_late, CAST(s.saved_ns AS BIGINT) AS saved_ns,
       m.measured_ns, m.measured_ns - s.saved_ns AS modelled_ns, m.slowest_rank
FROM late l JOIN saved s USING (run, step, x) JOIN m USING (run, step);
