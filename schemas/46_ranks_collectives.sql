-- Collectives matched across ranks: every collective kernel of a rank trace with what
-- its collective record says, matched into instances, on aligned clocks
-- (collective_ranks). The rules: 45_ranks_traces.sql's opening comment.

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
       CASE WHEN regexp_full_match(r, '\[((0|-?[1-9][0-9]{0,17})(,(0|-?[1-9][0-9]{0,17}))*)?\]')
            THEN replace(r, ',', ', ')  -- integers as JSON writes them: the same text
            ELSE '[' || array_to_string(from_json(r, '["BIGINT"]'), ', ') || ']' END AS pg_ranks,
       TRY_CAST(json_extract(g, '$.pg_size') AS INTEGER) AS group_size
FROM (SELECT timeline_id, g, CAST(json_extract(g, '$.ranks') AS VARCHAR) AS r
      FROM (SELECT timeline_id, json_extract(attrs, '$.distributedInfo.pg_config[0]') AS g
            FROM timelines
            WHERE format IN ('kineto', 'jax_trace')
              AND json_array_length(json_extract(attrs, '$.distributedInfo.pg_config')) = 1));

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
-- says, its ProfilerStep and its match key (see Matching in 45_ranks_traces.sql).
--   launch_ns: when its runtime call launched it (else its record_param_comms ran, else
--   its start); kind: AllReduce | AllGather | ReduceScatter | AllToAll | Broadcast |
--   Reduce | SendRecv | Barrier | NULL, from the collective name else the kernel name;
--   pg_hash: hash() of the group's ranks (text, in _pg_ranks), NULL's where not recorded.
-- The records' fields are read where they are scanned (_comm_args; a: the kernel's, b:
-- its record_param_comms event's, without the group's ranks), the ranks' text only
-- hashed: no step holds the records' JSON or that text.
CREATE OR REPLACE VIEW _rank_calls AS
WITH k AS MATERIALIZED (
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
                 OR timeline_id IN (  -- a kernel without its name or group
                     SELECT timeline_id FROM k WHERE a[1] IS NULL OR a[2] IS NULL)))
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
