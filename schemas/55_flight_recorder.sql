-- Hangs: torch.distributed Flight Recorder dumps (one per rank, ingest/flight_recorder.py)
-- and Python stack dumps (ingest/stack_dump.py) read together: which rank held up which
-- collective, and where each rank sat.
--
-- Incidents. A folder may hold the dumps of several hangs (a job restarted and hung again,
-- dumps written with TORCH_FR_DUMP_DYNAMIC_FILE_NAME). Dumps are taken in order of their
-- last entry's enqueue time (ties: order of ingest); each joins the incident of the one
-- before unless its rank is already in it, or its last entry is more than twice the
-- shortest timeout of its entries (timeout_ms; at most the timeout and 5 minutes) after
-- that dump's: a hang freezes every rank within about one step (a rank that arrives late,
-- after the timeout, still within it), and the next hang of a job comes at least a timeout
-- later. (Two jobs' dumps of disjoint ranks whose last entries lie within that time are
-- taken as one incident: fr_groups then shows their groups together.) Two dumps of one
-- rank whose entries overlap in time cannot be two hangs: they conflict (the second of
-- them is left out of the incident; fr_dumps.status says so).
--
-- Matching. Within an incident, a collective is one (process group, collective_seq_id):
-- torch numbers each group's collectives 1, 2, ... on every rank alike, so the same
-- number is the same collective. Point-to-point ops (is_p2p; gloo records none, NCCL one
-- entry per send or recv): matched by hang_verdict only, in groups of two members, by
-- p2p_seq_id (each rank numbers the group's p2p ops, a batch taking one id; with two
-- members every p2p op involves both, so the same number is the same exchange; in larger
-- groups the numbers of two ranks need not agree and p2p ops are not matched); a send
-- pairs with the peer's recv of the same transfer. The other views leave them out.
-- What torch's analyzer does with them: docs/hangs.md.

-- Caches (store/caches.py CACHES, per dump: refreshed for the dumps an ingest touched, inside
-- its transaction; rebuilt by `tlview migrate`): what the views below need of each dump's
-- entries, so that the verdict of a thousand dumps groups thousands of rows, not millions.
-- Read them through the views.
--
-- _fr_entry_state: every entry of every dump, and whether it completed: its state says so,
-- its completion was seen, or its group's pg_status on that rank counts it completed (gloo
-- records no start or completion in the entries: only pg_status tells).
CREATE OR REPLACE VIEW _fr_entry_state AS
SELECT e.*,
       (e.state = 'completed' OR e.completed_ns IS NOT NULL
        OR (NOT COALESCE(e.is_p2p, false) AND e.seq_id <= s.last_completed)) AS completed
FROM events_collective_recorded e
LEFT JOIN events_process_group_status s
  ON s.timeline_id = e.timeline_id AND s.pg_id = e.pg_id;

-- _fr_dump_stats_derived: per dump (timeline), its entries: how many, the enqueue times of
-- the oldest and newest, the largest and smallest timeout, and the newest entry's record id
-- (last_step), op, group and collective sequence id (each the arg_max over enqueue time).
CREATE OR REPLACE VIEW _fr_dump_stats_derived AS
SELECT timeline_id, count(*) AS n_entries, min(ts_ns) AS first_ns, max(ts_ns) AS last_ns,
       max(timeout_ms) AS timeout_ms, min(timeout_ms) AS min_timeout_ms,
       arg_max(step, ts_ns) AS last_step, arg_max(op, ts_ns) AS last_op,
       arg_max(process_group, ts_ns) AS last_group, arg_max(seq_id, ts_ns) AS last_seq
FROM events_collective_recorded GROUP BY timeline_id;

CREATE TABLE IF NOT EXISTS _cache_fr_dump_stats (
    timeline_id INTEGER, n_entries BIGINT, first_ns BIGINT, last_ns BIGINT,
    timeout_ms BIGINT, min_timeout_ms BIGINT, last_step BIGINT, last_op VARCHAR,
    last_group VARCHAR, last_seq BIGINT
);

-- _fr_calls_derived: per dump, process group and collective sequence id (p2p entries and
-- entries without an id left out), what the rank issued: h, one hash of its entries' op,
-- input and output sizes and dtypes (a coalesced group's ops share one id: their hashes are
-- summed modulo 2**64, so the order of the ops inside it is not compared; a UBIGINT, which
-- a shard set's Parquet keeps as it is, where a HUGEINT becomes a DOUBLE); state, the
-- first by name;
-- completed, whether all of them did (_fr_entry_state); ts_ns, when the first was enqueued;
-- n_entries.
CREATE OR REPLACE VIEW _fr_calls_derived AS
SELECT timeline_id, process_group, seq_id,
       CAST(sum(CAST(hash(op, in_sizes, out_sizes, in_dtypes, out_dtypes) AS HUGEINT))
            % 18446744073709551616 AS UBIGINT) AS h,
       min(state) AS state, bool_and(completed) AS completed, min(ts_ns) AS ts_ns,
       count(*) AS n_entries
FROM _fr_entry_state
WHERE NOT COALESCE(is_p2p, false) AND seq_id IS NOT NULL
GROUP BY timeline_id, process_group, seq_id;

CREATE TABLE IF NOT EXISTS _cache_fr_calls (
    timeline_id INTEGER, process_group VARCHAR, seq_id BIGINT, h UBIGINT, state VARCHAR,
    completed BOOLEAN, ts_ns BIGINT, n_entries BIGINT
);

-- _fr_cache_ranges(lo, hi, size): the pieces the store fills _cache_fr_calls of the dumps
-- lo..hi in (one statement each: a thousand dumps' entries grouped in one overran the
-- ingest's memory): (first dump, first dump, last dump) of consecutive dumps holding about
-- `size` entries together.
CREATE OR REPLACE MACRO _fr_cache_ranges(lo, hi, size) AS TABLE
SELECT min(timeline_id) AS timeline_id, min(timeline_id) AS first, max(timeline_id) AS last
FROM (SELECT timeline_id, sum(n) OVER (ORDER BY timeline_id) AS upto
      FROM (SELECT timeline_id, count(*) AS n FROM events_collective_recorded
            WHERE timeline_id BETWEEN lo AND hi GROUP BY timeline_id))
GROUP BY (upto - 1) // size ORDER BY 1;

-- fr_dumps: each Flight Recorder dump, its rank and incident.
--   rank: the dump's own `rank` key where it has one, else from its file name (rank_from
--   says which; NULL: no number in the name); form: pickle | json; version: as the dump
--   states it, version_known: a major version this tlview reads (1, 2; another is read by
--   structure all the same); n_entries; first_ns / last_ns: enqueue times (Unix ns) of its
--   oldest and newest entry; timeout_ms: the largest of its entries'; incident: see
--   Incidents above (NULL: no entry to place it by); status: ok | superseded (a later dump
--   of the same rank's ring holds this one's newest entry, same record id and enqueue time:
--   an on-demand dump before the watchdog's, the JSON beside the pickle; the latest is
--   read) | conflict (another dump of this rank overlaps it in time and is not of the same
--   ring: conflict_with names them; the rank is left out of the verdict) | no_rank |
--   empty (no entries).
CREATE OR REPLACE VIEW fr_dumps AS
WITH RECURSIVE d AS (
    SELECT t.timeline_id, t.source_id, t.source_path, t.name,
           COALESCE(TRY_CAST(json_extract(t.notes, '$.rank') AS BIGINT),
                    TRY_CAST(json_extract(t.attrs, '$.rank') AS BIGINT)) AS rank,
           CASE WHEN json_extract(t.notes, '$.rank') IS NOT NULL THEN 'content'
                ELSE json_extract_string(t.attrs, '$.rank_from') END AS rank_from,
           json_extract_string(t.attrs, '$.form') AS form,
           json_extract_string(t.notes, '$.version') AS version,
           COALESCE(TRY_CAST(json_extract(t.notes, '$.version_known') AS BOOLEAN), false)
               AS version_known,
           COALESCE(e.n_entries, 0) AS n_entries, e.first_ns, e.last_ns, e.timeout_ms,
           e.min_timeout_ms, e.last_step
    FROM timelines t LEFT JOIN _cache_fr_dump_stats e USING (timeline_id)
    WHERE t.format = 'flight_recorder'
), pairs0 AS MATERIALIZED (  -- two dumps of one rank overlapping in time; a: the older
    SELECT a.timeline_id AS a, b.timeline_id AS b, b.source_path AS b_path,
           a.last_step, a.last_ns
    FROM d a JOIN d b ON a.rank = b.rank AND a.timeline_id <> b.timeline_id
     AND a.first_ns <= b.last_ns AND b.first_ns <= a.last_ns
     AND [a.last_ns, a.n_entries, a.timeline_id] < [b.last_ns, b.n_entries, b.timeline_id]
), pairs AS (  -- same_ring: b holds a's newest entry (a join, not EXISTS: DuckDB would
    -- match every entry of every dump against the pairs, which are usually none)
    SELECT p.a, p.b, p.b_path, r.a IS NOT NULL AS same_ring
    FROM pairs0 p LEFT JOIN (
        SELECT DISTINCT p.a, p.b FROM pairs0 p JOIN events_collective_recorded e
          ON e.timeline_id = p.b AND e.step = p.last_step AND e.ts_ns = p.last_ns
    ) r ON r.a = p.a AND r.b = p.b
), conf AS (  -- dumps in a pair of two rings: both conflict
    SELECT t AS timeline_id, list(DISTINCT p ORDER BY p) AS conflict_with,
           bool_or(o < t) AS shadowed
    FROM (SELECT a AS t, b AS o, b_path AS p FROM pairs WHERE NOT same_ring
          UNION ALL
          SELECT p.b, p.a, d.source_path FROM pairs p JOIN d ON d.timeline_id = p.a
          WHERE NOT p.same_ring)
    GROUP BY t
), sup AS (  -- the older dump of a pair of one ring, and the newest dump it leads to
    SELECT a AS timeline_id, max(b) AS newer FROM pairs WHERE same_ring GROUP BY a
), o AS (
    SELECT d.timeline_id, d.rank, d.last_ns,
           (COALESCE(d.min_timeout_ms, 1800000)
            + least(COALESCE(d.min_timeout_ms, 1800000), 300000)) * 1000000 AS gap_ns,
           row_number() OVER (ORDER BY d.last_ns, d.timeline_id) AS i
    FROM d LEFT JOIN conf c USING (timeline_id)
    WHERE d.last_ns IS NOT NULL AND NOT COALESCE(c.shadowed, false)
      AND d.timeline_id NOT IN (SELECT timeline_id FROM sup)
), ob AS (  -- where an incident may end: after a gap, or at a rank seen before (prev)
    SELECT i, timeline_id,
           last_ns - lag(last_ns) OVER (ORDER BY i) > gap_ns AS gap,
           CASE WHEN rank IS NOT NULL THEN lag(i) OVER (PARTITION BY rank ORDER BY i) END
               AS prev
    FROM o
), starts(s, incident) AS (
    -- the dumps that begin an incident, walked from one to the next (as many steps as
    -- incidents): the first dump after s past a gap, or whose rank an earlier dump from
    -- s on already has
    SELECT 1, 1 WHERE EXISTS (SELECT 1 FROM o)
    UNION ALL
    SELECT min(ob.i), any_value(st.incident) + 1
    FROM starts st JOIN ob ON ob.i > st.s AND (ob.gap OR ob.prev >= st.s)
    GROUP BY st.s
), walk AS (
    SELECT ob.timeline_id, max(st.incident) AS incident
    FROM ob JOIN starts st ON st.s <= ob.i GROUP BY ob.timeline_id
), placed AS (
    SELECT timeline_id, incident FROM walk
    UNION ALL  -- a dump left out of the walk joins the incident of a twin in it
    SELECT x.timeline_id, w.incident
    FROM (SELECT p.a AS timeline_id, p.b AS twin FROM pairs p
          UNION ALL SELECT p.b, p.a FROM pairs p) x
    JOIN walk w ON w.timeline_id = x.twin
    WHERE x.timeline_id NOT IN (SELECT timeline_id FROM walk)
    QUALIFY row_number() OVER (PARTITION BY x.timeline_id ORDER BY x.twin) = 1
)
SELECT d.timeline_id, d.source_id, d.source_path, d.name, d.rank, d.rank_from, d.form,
       d.version, d.version_known, d.n_entries, d.first_ns, d.last_ns, d.timeout_ms,
       p.incident,
       CASE WHEN c.timeline_id IS NOT NULL THEN 'conflict'
            WHEN s.timeline_id IS NOT NULL THEN 'superseded' WHEN d.n_entries = 0 THEN 'empty'
            WHEN d.rank IS NULL THEN 'no_rank' ELSE 'ok' END AS status,
       COALESCE(c.conflict_with, []) AS conflict_with
FROM d LEFT JOIN conf c USING (timeline_id) LEFT JOIN sup s USING (timeline_id)
LEFT JOIN placed p USING (timeline_id);

-- _fr_entries: every entry of a usable dump (status ok) with its incident and rank, and
-- whether it completed (_fr_entry_state).
CREATE OR REPLACE VIEW _fr_entries AS
SELECT f.incident, f.rank, e.*
FROM _fr_entry_state e
JOIN fr_dumps f ON f.timeline_id = e.timeline_id AND f.status = 'ok';

-- fr_groups: per incident, each process group its dumps name, and its members.
--   process_group: torch's group name (pg uid); pg_desc; members: its global ranks as the
--   dumps' pg_config gives them (the union over the dumps naming them), else the ranks
--   whose dumps have entries of it, and for the default group (desc default_pg or name 0)
--   every rank from 0 to the highest with a dump (gloo's pg_config names no ranks: a
--   missing highest rank cannot be seen then); members_from: pg_config | entries | dumps;
--   ranks_with_dump: members whose dump is usable; missing: members without one.
CREATE OR REPLACE VIEW fr_groups AS
WITH g AS (  -- (each dump's groups first: the entries are not joined one by one)
    SELECT f.incident, x.process_group, any_value(x.pg_desc) AS pg_desc,
           list(DISTINCT f.rank ORDER BY f.rank) AS entry_ranks
    FROM (SELECT timeline_id, process_group, any_value(pg_desc) AS pg_desc
          FROM events_collective_recorded GROUP BY timeline_id, process_group) x
    JOIN fr_dumps f ON f.timeline_id = x.timeline_id AND f.status = 'ok'
    GROUP BY f.incident, x.process_group
), cfg AS (
    SELECT f.incident, p.process_group, list(DISTINCT r.r ORDER BY r.r) AS cfg_ranks
    FROM events_process_group p JOIN fr_dumps f USING (timeline_id),
         unnest(p.ranks) AS r(r)
    WHERE f.incident IS NOT NULL AND len(p.ranks) > 0
    GROUP BY f.incident, p.process_group
), top AS (
    SELECT incident, max(rank) AS top_rank,
           list(DISTINCT rank ORDER BY rank) FILTER (WHERE status = 'ok') AS usable
    FROM fr_dumps WHERE incident IS NOT NULL AND rank IS NOT NULL GROUP BY incident
), m AS (
    SELECT g.incident, g.process_group, g.pg_desc,
           CASE WHEN c.cfg_ranks IS NOT NULL THEN c.cfg_ranks
                WHEN g.pg_desc = 'default_pg' OR g.process_group = '0'
                THEN range(0, t.top_rank + 1)
                ELSE g.entry_ranks END AS members,
           CASE WHEN c.cfg_ranks IS NOT NULL THEN 'pg_config'
                WHEN g.pg_desc = 'default_pg' OR g.process_group = '0' THEN 'dumps'
                ELSE 'entries' END AS members_from,
           COALESCE(t.usable, []) AS usable
    FROM g LEFT JOIN cfg c USING (incident, process_group) LEFT JOIN top t USING (incident)
)
SELECT incident, process_group, pg_desc, members, members_from,
       list_intersect(members, usable) AS ranks_with_dump,
       list_sort(list_filter(members, lambda x: NOT list_contains(usable, x))) AS missing
FROM m;

-- collective_progress: per incident, rank and process group, how far the rank got.
--   last_enqueued_seq / last_started_seq / last_completed_seq: the group's collective
--   sequence ids as the dump's pg_status gives them (-1 there, none yet or not tracked:
--   NULL here; gloo tracks no start; gloo's count op ids, which its point-to-point ops
--   take without an entry: after a send or recv they run ahead of the entries' ids, see
--   docs/hangs.md), else from the entries' states; last_enqueued_op /
--   last_completed_op: those entries' ops (NULL where the ring no longer holds them);
--   first_seq: the oldest the ring holds; n_entries; pending: entries not completed;
--   stuck_since_ns: enqueue time of the oldest of them.
CREATE OR REPLACE VIEW collective_progress AS
WITH e AS (
    SELECT * FROM _fr_entries WHERE NOT COALESCE(is_p2p, false)
), a AS (
    SELECT incident, rank, timeline_id, process_group, any_value(pg_desc) AS pg_desc,
           any_value(pg_id) AS pg_id, count(*) AS n_entries, min(seq_id) AS first_seq,
           max(seq_id) AS max_seq,
           max(seq_id) FILTER (WHERE state IN ('started', 'completed')) AS max_started,
           max(seq_id) FILTER (WHERE completed) AS max_completed,
           count(*) FILTER (WHERE NOT completed) AS pending,
           min(ts_ns) FILTER (WHERE NOT completed) AS stuck_since_ns
    FROM e GROUP BY incident, rank, timeline_id, process_group
), p AS (
    SELECT a.*, NULLIF(s.last_enqueued, -1) AS s_enq, NULLIF(s.last_started, -1) AS s_start,
           NULLIF(s.last_completed, -1) AS s_done
    FROM a LEFT JOIN events_process_group_status s
      ON s.timeline_id = a.timeline_id AND s.pg_id = a.pg_id
), q AS MATERIALIZED (
    SELECT *, COALESCE(s_enq, max_seq) AS enq_seq, COALESCE(s_done, max_completed) AS done_seq
    FROM p
), ops AS (  -- the ops of those two ids (one join, not a query per row)
    SELECT x.timeline_id, x.process_group, x.seq_id,
           string_agg(x.op, ' + ' ORDER BY x.step) AS ops
    FROM e x JOIN q ON x.timeline_id = q.timeline_id AND x.process_group = q.process_group
     AND (x.seq_id = q.enq_seq OR x.seq_id = q.done_seq)
    GROUP BY x.timeline_id, x.process_group, x.seq_id
)
SELECT q.incident, q.rank, q.timeline_id, q.process_group, q.pg_desc,
       q.enq_seq AS last_enqueued_seq, oe.ops AS last_enqueued_op,
       COALESCE(q.s_start, q.max_started) AS last_started_seq,
       q.done_seq AS last_completed_seq, od.ops AS last_completed_op,
       q.first_seq, q.n_entries, q.pending, q.stuck_since_ns
FROM q
LEFT JOIN ops oe ON oe.timeline_id = q.timeline_id AND oe.process_group = q.process_group
 AND oe.seq_id = q.enq_seq
LEFT JOIN ops od ON od.timeline_id = q.timeline_id AND od.process_group = q.process_group
 AND od.seq_id = q.done_seq;

-- hang_verdict: per incident and process group, the first collective where the ranks
-- disagree, one row per member rank.
--   The window: from the largest of the member ranks' oldest sequence ids in their rings
--   (before it some ring no longer tells) to the largest id any rank issued. The first id
--   in it where a member rank with a dump has no entry, the ranks' ops, input or output
--   sizes or dtypes differ, their states differ, or it is not completed everywhere, is the
--   group's collective (seq); finding says which, in that order of precedence: 'rank
--   missing' | 'op mismatch' | 'size mismatch' | 'dtype mismatch' | 'state mismatch' |
--   'not completed'. Ranks without a usable dump are 'missing dump' wherever the others
--   all agree up to where they wait. (Gloo's entries say nothing of completion: it comes
--   from pg_status, whose counts are gloo's op ids, compared with the sequence ids; after
--   point-to-point ops, which take op ids without entries, a rank waiting in a collective
--   reads completed there: docs/hangs.md.)
--   verdict, per rank: missing dump (no usable dump: conflicting dumps say so in reason) |
--   never issued it (its last id in the group is below seq) | not in its ring (its ring
--   starts after seq) | issued a different op | different sizes | different dtypes |
--   different state | waiting (issued it as the others did, not completed) | completed;
--   culprit: true for the verdicts that hold the others up (missing from the collective,
--   issued something else), false for waiting and completed ranks, NULL where it cannot
--   be told: a missing dump, or ranks split evenly between two versions of the call (two
--   ranks, each differing from the other).
--   expected_ops / expected_sizes: what most of the ranks that issued it issued (their
--   op and input sizes; NULL on an even split); ops / in_sizes / out_sizes / dtypes /
--   state: this rank's; since_ns: the earliest enqueue of seq on any rank (how long the
--   others have waited: from then); last_op / last_group / last_seq / last_ns: this rank's
--   newest entry in any group (where it got to); blocked_in: its oldest entry not
--   completed in another group, 'group:seq op' (a rank waiting elsewhere cannot come);
--   root: true for the group whose collective was issued first in the incident (the
--   others' hangs usually follow from it); reason: the row in words.
--   Point-to-point exchanges (groups of two members; NCCL): per p2p id (p2p_seq_id) from
--   where both rings hold the group's p2p ids, the first where a member issued no p2p op,
--   the sends and recvs do not pair up (a send 'a->b' pairs with a recv 'b<-a' of the
--   peer moving the same sizes, then dtypes: else 'op mismatch', 'size mismatch', 'dtype
--   mismatch'), or an op is not completed (a batch's ops stay 'scheduled': its end entry,
--   'nccl:coalesced' with the same p2p id, tells) is the group's exchange; the group's row
--   set is the collective's or the exchange's, whichever was enqueued first (ties: the
--   collective). Its rows: seq, the entries' collective_seq_id (the group's last
--   collective before it: fr_trace's "sequence number"); p2p_seq, its p2p id; verdict as
--   above (different sizes / op / dtypes: the rank has an op that pairs with nothing);
--   culprit true for a rank that never issued it, NULL for ops that do not pair (the
--   sender or the receiver may be wrong); expected_ops / expected_sizes: the peer's ops
--   and input sizes; reason names each rank's unpaired ops and what the peer posted.
--   p2p_seq: NULL on a collective's rows.
--   Where two ranks split evenly (culprit NULL), torch's analyzer names one all the
--   same: it takes the call of the rank whose dump it read first as the reference, in the
--   order os.walk lists the folder (not sorted: rank 1 on gloo_sizes, rank 0 on the NCCL
--   coalesced fixture), so its culprit there is not a property of the dumps and is not
--   reproduced; of a p2p batch whose ops do not pair it names none.
CREATE OR REPLACE VIEW hang_verdict AS
WITH dumps AS MATERIALIZED (
    SELECT timeline_id, incident, rank FROM fr_dumps WHERE status = 'ok'
), grp AS MATERIALIZED (  -- called: the group as the reasons name it (its description,
    -- else, none or torch's 'undefined', 'group <name>': store/hang_queries.group_name)
    SELECT *, CASE WHEN pg_desc IS NULL OR pg_desc = 'undefined' THEN 'group ' || process_group
                   ELSE pg_desc END AS called
    FROM fr_groups
), mine AS MATERIALIZED (  -- each rank's ids in each group: what its ring holds (grouped
    -- by dump first: the calls are joined to nothing row by row)
    SELECT d.incident, k.process_group, d.rank, k.timeline_id, k.first, k.last
    FROM (SELECT timeline_id, process_group, min(seq_id) AS first, max(seq_id) AS last
          FROM _cache_fr_calls GROUP BY ALL) k
    JOIN dumps d USING (timeline_id)
), lo AS (  -- the window's start: every member's ring holds ids from here
    SELECT incident, process_group, max(first) AS lo_seq FROM mine GROUP BY ALL
), mem AS MATERIALIZED (  -- per dump and group: the window's start, and whether the rank
    -- is a member with a usable dump
    SELECT mi.timeline_id, mi.incident, mi.process_group, lo.lo_seq,
           list_contains(g.ranks_with_dump, mi.rank) AS member
    FROM mine mi JOIN lo USING (incident, process_group)
    JOIN grp g USING (incident, process_group)
), per_seq AS (
    -- per collective sequence id from the window's start, over the ranks' calls
    -- (_fr_calls_derived, cached: one row per rank and id): issued, how many of those
    -- members issued it (counted, not listed: a list per id, searched for every member,
    -- cost ranks squared); whether their calls or states differ (two values differ where
    -- the least and the greatest do: no DISTINCT, whose per-id sets of 2M calls overran
    -- the ingest's 256MB); whether all completed; the earliest enqueue
    SELECT m.incident, k.process_group, k.seq_id AS seq,
           count(*) FILTER (WHERE m.member) AS issued,
           min(k.h) <> max(k.h) AS call_diff,
           COALESCE(min(k.state) <> max(k.state), false) AS state_diff,
           bool_and(k.completed) AS all_done, min(k.ts_ns) AS since_ns
    FROM _cache_fr_calls k
    JOIN mem m ON m.timeline_id = k.timeline_id AND m.process_group = k.process_group
    WHERE k.seq_id >= m.lo_seq
    GROUP BY ALL
), first AS (
    SELECT p.*, g.members, g.ranks_with_dump,
           p.issued < len(g.ranks_with_dump) AS rank_gone,
           len(g.missing) > 0 AND NOT p.all_done AS dump_gone
    FROM per_seq p JOIN grp g USING (incident, process_group)
    WHERE p.call_diff OR p.state_diff OR NOT p.all_done
       OR p.issued < len(g.ranks_with_dump)
    QUALIFY row_number() OVER (PARTITION BY p.incident, p.process_group ORDER BY p.seq) = 1
), sig AS MATERIALIZED (  -- the calls of those ids, in words
    SELECT e.incident, e.process_group, e.rank, e.seq_id AS seq,
           string_agg(e.op, ' + ' ORDER BY e.step) AS ops,
           string_agg(e.in_sizes, ' + ' ORDER BY e.step) AS in_sizes,
           string_agg(e.out_sizes, ' + ' ORDER BY e.step) AS out_sizes,
           string_agg(e.in_dtypes, ' + ' ORDER BY e.step) AS in_dtypes,
           string_agg(e.out_dtypes, ' + ' ORDER BY e.step) AS out_dtypes,
           min(e.state) AS state, bool_and(e.completed) AS completed
    FROM _fr_entries e
    JOIN first f ON f.incident = e.incident AND f.process_group = e.process_group
     AND f.seq = e.seq_id
    WHERE NOT COALESCE(e.is_p2p, false)
    GROUP BY e.incident, e.process_group, e.rank, e.seq_id
), sig_h AS (
    SELECT *, hash(ops, in_sizes, out_sizes, in_dtypes, out_dtypes) AS h FROM sig
), fs AS (  -- (grouped by id alone: the members' lists are not hashed per rank)
    SELECT f.incident, f.process_group, f.seq, f.since_ns, f.members, f.ranks_with_dump,
           f.state_diff, f.rank_gone, f.dump_gone, f.all_done,
           COALESCE(s.op_diff, false) AS op_diff, COALESCE(s.size_diff, false) AS size_diff,
           COALESCE(s.dtype_diff, false) AS dtype_diff, s.major_state
    FROM first f LEFT JOIN (
        SELECT incident, process_group, seq, count(DISTINCT ops) > 1 AS op_diff,
               count(DISTINCT [in_sizes, out_sizes]) > 1 AS size_diff,
               count(DISTINCT [in_dtypes, out_dtypes]) > 1 AS dtype_diff,
               mode(state) AS major_state
        FROM sig_h GROUP BY ALL
    ) s USING (incident, process_group, seq)
), found AS (
    SELECT *,
           CASE WHEN rank_gone THEN 'rank missing' WHEN op_diff THEN 'op mismatch'
                WHEN size_diff THEN 'size mismatch' WHEN dtype_diff THEN 'dtype mismatch'
                WHEN state_diff THEN 'state mismatch' WHEN dump_gone THEN 'rank missing'
                ELSE 'not completed' END AS finding
    FROM fs
), votes AS (
    SELECT incident, process_group, seq, h, count(*) AS n,
           any_value({'ops': ops, 'in_sizes': in_sizes, 'out_sizes': out_sizes}) AS call
    FROM sig_h GROUP BY ALL
), major AS (  -- the version most ranks issued; NULL where two or more tie
    SELECT incident, process_group, seq,
           CASE WHEN count(*) FILTER (WHERE n = top) = 1 THEN arg_max(h, n) END AS h,
           CASE WHEN count(*) FILTER (WHERE n = top) = 1 THEN arg_max(call, n) END AS call
    FROM (SELECT *, max(n) OVER (PARTITION BY incident, process_group, seq) AS top FROM votes)
    GROUP BY ALL
), rows AS (
    SELECT f.*, m.r AS rank, list_contains(f.ranks_with_dump, m.r) AS has_dump
    FROM found f, unnest(f.members) AS m(r)
), reach AS (  -- each rank's newest entry, any group (_fr_dump_stats_derived, cached),
    -- and in words for the reasons
    SELECT d.incident, d.rank, s.last_op, s.last_group, s.last_seq, s.last_ns,
           '; its last entry: ' || s.last_op || ' ' || s.last_group || ':' || s.last_seq
             AS last_words
    FROM dumps d JOIN _cache_fr_dump_stats s USING (timeline_id)
), pending AS (  -- each rank's oldest entry not completed, per group
    SELECT incident, rank, process_group,
           arg_min(process_group || ':' || seq_id || ' ' || op, [ts_ns, step]) AS what
    FROM _fr_entries WHERE NOT completed AND NOT COALESCE(is_p2p, false) GROUP BY ALL
), conflicts AS (
    SELECT incident, rank, list(source_path ORDER BY timeline_id) AS paths
    FROM fr_dumps WHERE status = 'conflict' GROUP BY ALL
), v AS (
    SELECT r.*, s.ops, s.in_sizes, s.out_sizes, s.in_dtypes AS dtypes, s.state, s.completed,
           s.h,
           mj.h AS major_h, mj.call.ops AS expected_ops, mj.call.in_sizes AS expected_sizes,
           mi.first AS my_first, cf.paths AS conflict_paths,
           CASE WHEN NOT r.has_dump THEN 'missing dump'
                WHEN s.rank IS NULL AND mi.first > r.seq THEN 'not in its ring'
                WHEN s.rank IS NULL THEN 'never issued it'
                WHEN mj.h IS NOT NULL AND s.h <> mj.h THEN
                     CASE WHEN s.ops <> mj.call.ops THEN 'issued a different op'
                          WHEN [s.in_sizes, s.out_sizes]
                               <> [mj.call.in_sizes, mj.call.out_sizes] THEN 'different sizes'
                          ELSE 'different dtypes' END
                WHEN mj.h IS NULL AND r.op_diff THEN 'issued a different op'
                WHEN mj.h IS NULL AND r.size_diff THEN 'different sizes'
                WHEN mj.h IS NULL AND r.dtype_diff THEN 'different dtypes'
                WHEN r.state_diff AND s.state <> r.major_state THEN 'different state'
                WHEN NOT s.completed THEN 'waiting'
                ELSE 'completed' END AS verdict
    FROM rows r
    LEFT JOIN sig_h s USING (incident, process_group, seq, rank)
    LEFT JOIN major mj USING (incident, process_group, seq)
    LEFT JOIN mine mi USING (incident, process_group, rank)
    LEFT JOIN conflicts cf USING (incident, rank)
), coll AS (  -- the collectives' rows
SELECT v.incident, v.process_group, g.pg_desc, v.seq, v.finding, v.rank, v.verdict,
       CASE WHEN v.verdict IN ('missing dump', 'not in its ring') THEN NULL
            WHEN v.verdict IN ('waiting', 'completed') THEN false
            WHEN v.verdict = 'different state' THEN true
            WHEN v.major_h IS NULL AND v.verdict IN ('issued a different op',
                 'different sizes', 'different dtypes') THEN NULL
            ELSE true END AS culprit,
       v.expected_ops, v.expected_sizes, v.ops, v.in_sizes, v.out_sizes, v.dtypes,
       v.state, v.since_ns, re.last_op, re.last_group, re.last_seq, re.last_ns,
       CASE v.verdict
            WHEN 'missing dump' THEN 'rank ' || v.rank || ': '
                 || CASE WHEN v.conflict_paths IS NOT NULL
                         THEN 'dumps that conflict (' || array_to_string(v.conflict_paths, ', ')
                              || ') claim it'
                         ELSE 'no Flight Recorder dump of it in this incident' END
            WHEN 'never issued it' THEN 'rank ' || v.rank || ' never issued '
                 || g.called || ' #' || v.seq || ' (' || COALESCE(v.expected_ops, '?') || ')'
                 || COALESCE(re.last_words, '')
            WHEN 'not in its ring' THEN 'rank ' || v.rank || ': its ring buffer starts at #'
                 || v.my_first || ', after #' || v.seq
            WHEN 'waiting' THEN 'rank ' || v.rank || ' issued ' || v.ops || ' and waits'
            WHEN 'completed' THEN 'rank ' || v.rank || ' completed ' || v.ops
            ELSE 'rank ' || v.rank || ' ' || v.verdict || ': ' || COALESCE(v.ops, '?') || ' '
                 || COALESCE(v.in_sizes, '') || ' where '
                 || COALESCE('the others issued ' || v.expected_ops || ' '
                             || COALESCE(v.expected_sizes, ''), 'the ranks split evenly')
       END AS reason,
       NULL::BIGINT AS p2p_seq
FROM v JOIN grp g USING (incident, process_group)
LEFT JOIN reach re ON re.incident = v.incident AND re.rank = v.rank
), p2p_ops AS MATERIALIZED (  -- the point-to-point entries of groups of two members, each
    -- as a transfer: [src, dst] (group ranks, from the name: 'nccl:send 0->1' is from 0 to
    -- 1, 'nccl:recv 0<-1' from 1 to 0), the sizes and dtypes it moves (a send's inputs, a
    -- recv's outputs); completed: its state, else the end entry of its batch
    -- ('nccl:coalesced' with its p2p id) completed (NCCL leaves a batch's ops 'scheduled')
    SELECT e.incident, e.process_group, e.rank, e.timeline_id, e.p2p_seq_id AS p2p_seq,
           e.seq_id, e.step, e.op, e.in_sizes, e.out_sizes, e.in_dtypes, e.state, e.ts_ns,
           e.completed OR COALESCE(b.done, false) AS completed,
           regexp_extract(e.op, '(send|recv) (\d+)(->|<-)(\d+)$', 1) AS kind,
           CASE WHEN regexp_extract(e.op, '(\d+)(->|<-)(\d+)$', 2) = '->'
                THEN [TRY_CAST(regexp_extract(e.op, '(\d+)(->|<-)(\d+)$', 1) AS BIGINT),
                      TRY_CAST(regexp_extract(e.op, '(\d+)(->|<-)(\d+)$', 3) AS BIGINT)]
                ELSE [TRY_CAST(regexp_extract(e.op, '(\d+)(->|<-)(\d+)$', 3) AS BIGINT),
                      TRY_CAST(regexp_extract(e.op, '(\d+)(->|<-)(\d+)$', 1) AS BIGINT)]
           END AS pair,
           CASE WHEN e.op LIKE '%recv%' THEN e.out_sizes ELSE e.in_sizes END AS moved,
           CASE WHEN e.op LIKE '%recv%' THEN e.out_dtypes ELSE e.in_dtypes END AS moved_dtypes
    FROM _fr_entries e
    JOIN grp g ON g.incident = e.incident AND g.process_group = e.process_group
     AND len(g.members) = 2
    LEFT JOIN (SELECT timeline_id, process_group, p2p_seq_id, bool_or(completed) AS done
               FROM _fr_entries
               WHERE NOT COALESCE(is_p2p, false) AND op LIKE '%:coalesced'
               GROUP BY ALL) b
      ON b.timeline_id = e.timeline_id AND b.process_group = e.process_group
     AND b.p2p_seq_id = e.p2p_seq_id
    WHERE e.is_p2p AND e.p2p_seq_id IS NOT NULL
), p2p_mine AS (  -- each rank's p2p ids in the group: the first its ring holds (an entry
    -- that is not p2p carries the last p2p id issued before it), the last it issued
    SELECT e.incident, e.process_group, e.rank,
           min(e.p2p_seq_id + CASE WHEN e.is_p2p THEN 0 ELSE 1 END) AS first,
           max(e.p2p_seq_id) FILTER (WHERE e.is_p2p) AS last
    FROM _fr_entries e
    WHERE e.process_group IN (SELECT process_group FROM p2p_ops) AND e.p2p_seq_id IS NOT NULL
    GROUP BY ALL
), p2p_x AS (  -- per p2p id from where both rings hold them: who issued it, whether its
    -- sends and recvs pair up ([src, dst] alone, then with sizes, then dtypes), done
    SELECT o.incident, o.process_group, o.p2p_seq, min(o.seq_id) AS seq,
           count(DISTINCT o.rank) AS issued,
           list_sort(list([o.pair] ORDER BY o.step) FILTER (WHERE o.kind = 'send'))
             <> list_sort(list([o.pair] ORDER BY o.step) FILTER (WHERE o.kind = 'recv'))
             AS op_diff,
           list_sort(list({'pair': o.pair, 'moved': o.moved} ORDER BY o.step) FILTER (WHERE o.kind = 'send'))
             <> list_sort(list({'pair': o.pair, 'moved': o.moved} ORDER BY o.step)
                          FILTER (WHERE o.kind = 'recv')) AS size_diff,
           list_sort(list({'pair': o.pair, 'moved': o.moved, 'dtypes': o.moved_dtypes}
                          ORDER BY o.step)
                     FILTER (WHERE o.kind = 'send'))
             <> list_sort(list({'pair': o.pair, 'moved': o.moved, 'dtypes': o.moved_dtypes}
                          ORDER BY o.step)
                          FILTER (WHERE o.kind = 'recv')) AS dtype_diff,
           bool_and(o.completed) AS all_done, min(o.ts_ns) AS since_ns,
           count(*) FILTER (WHERE o.kind = '') AS n_odd
    FROM p2p_ops o
    WHERE o.p2p_seq >= (SELECT max(m.first) FROM p2p_mine m
                        WHERE m.incident = o.incident AND m.process_group = o.process_group)
    GROUP BY ALL
), p2p_first AS (
    SELECT x.*, g.members, g.ranks_with_dump, x.issued < len(g.ranks_with_dump) AS rank_gone,
           CASE WHEN x.issued < len(g.ranks_with_dump) THEN 'rank missing'
                WHEN x.n_odd > 0 OR x.op_diff THEN 'op mismatch'
                WHEN x.size_diff THEN 'size mismatch' WHEN x.dtype_diff THEN 'dtype mismatch'
                WHEN len(g.missing) > 0 AND NOT x.all_done THEN 'rank missing'
                ELSE 'not completed' END AS finding
    FROM p2p_x x JOIN grp g USING (incident, process_group)
    WHERE x.issued < len(g.ranks_with_dump) OR x.n_odd > 0 OR x.op_diff OR x.size_diff
       OR x.dtype_diff OR NOT x.all_done
    QUALIFY row_number() OVER (PARTITION BY x.incident, x.process_group ORDER BY x.p2p_seq)
            = 1
), p2p_sig AS (  -- per rank, its ops of that id in words, and those that pair with no op of
    -- the other side (sends with no recv of the same transfer, and the reverse)
    SELECT o.incident, o.process_group, o.rank, o.p2p_seq,
           string_agg(o.op, ' + ' ORDER BY o.step) AS ops,
           string_agg(o.in_sizes, ' + ' ORDER BY o.step) AS in_sizes,
           string_agg(o.out_sizes, ' + ' ORDER BY o.step) AS out_sizes,
           string_agg(o.in_dtypes, ' + ' ORDER BY o.step) AS dtypes,
           min(o.state) AS state, bool_and(o.completed) AS completed,
           string_agg(o.op || ' ' || o.moved, ' + ' ORDER BY o.step) AS words,
           string_agg(o.op || ' ' || o.moved, ' + ' ORDER BY o.step) FILTER (WHERE NOT EXISTS (
               SELECT 1 FROM p2p_ops q
               WHERE q.incident = o.incident AND q.process_group = o.process_group
                 AND q.p2p_seq = o.p2p_seq AND q.rank <> o.rank AND q.kind <> o.kind
                 AND q.pair = o.pair AND q.moved = o.moved
                 AND q.moved_dtypes IS NOT DISTINCT FROM o.moved_dtypes)) AS unmatched
    FROM p2p_ops o JOIN p2p_first f USING (incident, process_group, p2p_seq)
    GROUP BY ALL
), p2p_rows AS (  -- one row per member, apart from the joins below (the duckdb CLI 1.5
    -- plans no outer join on a lateral unnest's columns)
    SELECT f.*, m.r FROM p2p_first f, unnest(f.members) AS m(r)
), p2p_peer AS (  -- per member, what the other ranks posted: their ops, input sizes, and
    -- ops with what each moves, in rank order
    SELECT f.incident, f.process_group, f.p2p_seq, f.r,
           string_agg(s.ops, '; ' ORDER BY s.rank) AS ops,
           string_agg(s.in_sizes, '; ' ORDER BY s.rank) AS sizes,
           string_agg(s.words, '; ' ORDER BY s.rank) AS words
    FROM p2p_rows f
    JOIN p2p_sig s ON s.incident = f.incident AND s.process_group = f.process_group
     AND s.p2p_seq = f.p2p_seq AND s.rank <> f.r
    GROUP BY ALL
), p2p_v AS (
    SELECT f.incident, f.process_group, f.seq, f.p2p_seq, f.finding, f.since_ns, f.r AS rank,
           s.ops, s.in_sizes, s.out_sizes, s.dtypes, s.state, s.completed, s.unmatched,
           pp.ops AS peer_ops, pp.sizes AS peer_sizes, pp.words AS peer_words,
           pm.first AS my_first,
           CASE WHEN NOT list_contains(f.ranks_with_dump, f.r) THEN 'missing dump'
                WHEN s.rank IS NULL AND pm.first > f.p2p_seq THEN 'not in its ring'
                WHEN s.rank IS NULL THEN 'never issued it'
                WHEN s.unmatched IS NOT NULL AND f.finding = 'op mismatch'
                THEN 'issued a different op'
                WHEN s.unmatched IS NOT NULL AND f.finding = 'size mismatch'
                THEN 'different sizes'
                WHEN s.unmatched IS NOT NULL AND f.finding = 'dtype mismatch'
                THEN 'different dtypes'
                WHEN NOT s.completed THEN 'waiting'
                ELSE 'completed' END AS verdict
    FROM p2p_rows f
    LEFT JOIN p2p_sig s ON s.incident = f.incident AND s.process_group = f.process_group
     AND s.p2p_seq = f.p2p_seq AND s.rank = f.r
    LEFT JOIN p2p_peer pp ON pp.incident = f.incident AND pp.process_group = f.process_group
     AND pp.p2p_seq = f.p2p_seq AND pp.r = f.r
    LEFT JOIN p2p_mine pm ON pm.incident = f.incident AND pm.process_group = f.process_group
     AND pm.rank = f.r
), p2p AS (  -- the point-to-point exchanges' rows
SELECT v.incident, v.process_group, g.pg_desc, v.seq, v.finding, v.rank, v.verdict,
       -- a transfer that does not pair up: either side may be wrong (a rank absent from
       -- the exchange holds it up)
       CASE WHEN v.verdict IN ('missing dump', 'not in its ring') THEN NULL
            WHEN v.verdict IN ('waiting', 'completed') THEN false
            WHEN v.verdict = 'never issued it' THEN true
            ELSE NULL END AS culprit,
       v.peer_ops AS expected_ops, v.peer_sizes AS expected_sizes, v.ops, v.in_sizes,
       v.out_sizes, v.dtypes, v.state, v.since_ns, re.last_op, re.last_group, re.last_seq,
       re.last_ns,
       CASE v.verdict
            WHEN 'missing dump' THEN 'rank ' || v.rank
                 || ': no Flight Recorder dump of it in this incident'
            WHEN 'never issued it' THEN 'rank ' || v.rank || ' never issued '
                 || g.called || ' p2p #' || v.p2p_seq || ' (after #' || v.seq
                 || '; the peer posted ' || COALESCE(v.peer_ops, '?') || ')'
                 || COALESCE(re.last_words, '')
            WHEN 'not in its ring' THEN 'rank ' || v.rank || ': its ring buffer starts at p2p #'
                 || v.my_first || ', after p2p #' || v.p2p_seq
            WHEN 'waiting' THEN 'rank ' || v.rank || ' issued ' || v.ops || ' and waits'
            WHEN 'completed' THEN 'rank ' || v.rank || ' completed ' || v.ops
            ELSE 'rank ' || v.rank || ' ' || v.verdict || ' in p2p #' || v.p2p_seq || ': '
                 || v.unmatched || ' pairs with no op of the peer, which posted '
                 || COALESCE(v.peer_words, 'nothing')
                 || ' (either side may be wrong'
                 || CASE WHEN v.ops LIKE '% + %'
                         THEN ': torch''s analyzer names no culprit of a batch either)'
                         ELSE ')' END
       END AS reason,
       v.p2p_seq
FROM p2p_v v JOIN grp g USING (incident, process_group)
LEFT JOIN reach re ON re.incident = v.incident AND re.rank = v.rank
), pick AS (  -- per group, the collective's finding, else the exchange's, whichever began
    -- first (ties: the collective)
    SELECT incident, process_group, arg_min(p2p, [since_ns, p2p::INT]) AS p2p
    FROM (SELECT DISTINCT incident, process_group, since_ns, false AS p2p FROM coll
          UNION ALL SELECT DISTINCT incident, process_group, since_ns, true FROM p2p)
    GROUP BY ALL
), all_rows AS (
    SELECT c.* FROM coll c JOIN pick k USING (incident, process_group) WHERE NOT k.p2p
    UNION ALL BY NAME
    SELECT p.* FROM p2p p JOIN pick k USING (incident, process_group) WHERE k.p2p
)
SELECT incident, process_group, pg_desc, seq, finding, rank, verdict, culprit, expected_ops,
       expected_sizes, ops, in_sizes, out_sizes, dtypes, state, since_ns, last_op, last_group,
       last_seq, last_ns,
       (SELECT string_agg(p.what, ', ' ORDER BY p.what) FROM pending p
        WHERE p.incident = a.incident AND p.rank = a.rank
          AND p.process_group <> a.process_group) AS blocked_in,
       dense_rank() OVER (PARTITION BY incident ORDER BY since_ns) = 1 AS root,
       reason, p2p_seq
FROM all_rows a;

-- hang_stacks: per rank of an incident with a Python stack dump, each thread's innermost
-- frames (stack dumps are joined by rank; where an incident's ranks have several stack
-- dumps, each is listed).
--   timeline_id: the stack dump's; thread, name, state (current | active | idle | ...);
--   frame: the innermost frame as 'func (file:line)'; frames: the whole stack, innermost
--   first, as 'func (file:line)'.
CREATE OR REPLACE VIEW hang_stacks AS
WITH s AS (
    SELECT t.timeline_id, t.source_id,
           TRY_CAST(json_extract(t.attrs, '$.rank') AS BIGINT) AS rank
    FROM timelines t WHERE t.format = 'stack_dump'
), f AS (
    SELECT st.source_id, st.stack_id, i, fr.name || ' (' || COALESCE(fr.filename, '?') || ':'
           || COALESCE(CAST(fr.line AS VARCHAR), '?') || ')' AS text
    FROM stacks st, unnest(st.frame_ids) WITH ORDINALITY AS u(frame_id, i)
    JOIN frames fr ON fr.source_id = st.source_id AND fr.frame_id = u.frame_id
)
SELECT i.incident, s.rank, s.timeline_id, ts.step AS thread_index, ts.thread, ts.name,
       ts.state,
       (SELECT text FROM f WHERE f.source_id = s.source_id AND f.stack_id = ts.stack_id
        AND f.i = 1) AS frame,
       (SELECT list(text ORDER BY i) FROM f
        WHERE f.source_id = s.source_id AND f.stack_id = ts.stack_id) AS frames
FROM s JOIN events_thread_stack ts USING (timeline_id)
LEFT JOIN (SELECT DISTINCT incident, rank FROM fr_dumps WHERE incident IS NOT NULL) i
  ON i.rank = s.rank;

-- compile_divergence: compile ids that some ranks' TORCH_TRACE logs hold and others do
-- not (the desync tlparse warns about: a rank that recompiled, or compiled another graph,
-- issues other collectives, and the job hangs or mismatches).
--   compile_id: torch's ('0/0', '1/0_1'); ranks: the ranks whose logs hold it; missing:
--   the ranks with a TORCH_TRACE log in the database that lack it (every log's rank is
--   counted, whatever run it is of).
CREATE OR REPLACE VIEW compile_divergence AS
WITH c AS (
    SELECT compile_id, list(DISTINCT rank ORDER BY rank) AS ranks
    FROM compile_events WHERE rank IS NOT NULL AND compile_id IS NOT NULL
    GROUP BY compile_id
), a AS (
    SELECT list(DISTINCT rank ORDER BY rank) AS all_ranks
    FROM compile_events WHERE rank IS NOT NULL
)
SELECT c.compile_id, c.ranks,
       list_filter(a.all_ranks, lambda x: NOT list_contains(c.ranks, x)) AS missing
FROM c, a WHERE len(c.ranks) < len(a.all_ranks);
