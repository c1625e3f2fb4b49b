-- Named queries of hangs (schemas/55_flight_recorder.sql), read by tlview.store.hang_queries
-- for the ingest's report, the run report and the terminal UI's hang screen.

-- name: hang_incidents
-- Every incident: its dumps' ranks, the ranks its groups miss, conflicting and rankless
-- dumps, its span of enqueue times, a dump of it to open (timeline_id). $1: a list of
-- timeline ids, or NULL for all: only the incidents holding one of them; $2: a run id, or
-- NULL: only the incidents holding one of its dumps.
WITH d AS (
    SELECT * FROM fr_dumps WHERE incident IS NOT NULL
), sel AS (
    SELECT DISTINCT incident FROM d
    WHERE ($1::INTEGER[] IS NULL OR list_contains($1::INTEGER[], timeline_id))
      AND ($2::INTEGER IS NULL
           OR timeline_id IN (SELECT timeline_id FROM timeline_runs WHERE run_id = $2))
), miss AS (
    SELECT incident, list(DISTINCT m ORDER BY m) AS missing
    FROM fr_groups, unnest(missing) AS u(m) GROUP BY incident
)
SELECT d.incident, count(*) AS n_dumps,
       list(d.rank ORDER BY d.rank) FILTER (WHERE d.status = 'ok') AS ranks,
       COALESCE(any_value(m.missing), []) AS missing,
       list(DISTINCT d.rank ORDER BY d.rank) FILTER (WHERE d.status = 'conflict') AS conflicts,
       list(d.rank || ' ' || d.source_path ORDER BY d.rank, d.timeline_id)
           FILTER (WHERE d.status = 'conflict') AS conflict_paths,
       count(*) FILTER (WHERE d.status = 'no_rank') AS no_rank,
       list(DISTINCT d.version ORDER BY d.version) AS versions,
       bool_and(d.version_known) AS versions_known,
       min(d.first_ns) AS first_ns, max(d.last_ns) AS last_ns,
       min(d.timeline_id) FILTER (WHERE d.status = 'ok') AS timeline_id
FROM d JOIN sel USING (incident) LEFT JOIN miss m USING (incident)
GROUP BY d.incident ORDER BY d.incident;

-- name: hang_dumps_once
-- fr_dumps read once for what follows: its rows as a temporary table of that name in the
-- asking connection, which hang_verdict, fr_groups, _fr_entries, collective_progress and
-- hang_stacks then read in its place (DuckDB binds a view's names when it is queried,
-- temporary objects first). Each of those names fr_dumps several times (hang_verdict ten
-- times, through fr_groups and _fr_entries), and each time its walk of the incidents is
-- planned anew: on four dumps a query of hang_verdict took 1.1 CPU-s, 0.14 with it
-- (store/hang_queries.py: dumps_read_once). Its rows are the view's; hang_dumps_drop drops
-- it. (The SQL a report prints reads the views as they are: pasted, it gives the same.)
CREATE TEMP TABLE fr_dumps AS SELECT * FROM main.fr_dumps;

-- name: hang_dumps_drop
DROP TABLE IF EXISTS temp.fr_dumps;

-- name: hang_dumps_are_read
-- Whether this connection holds fr_dumps read once (hang_dumps_once).
SELECT count(*) > 0 FROM duckdb_tables() WHERE temporary AND table_name = 'fr_dumps';

-- name: hang_verdicts
-- The verdict rows of incident $1: root group first, culprits first.
SELECT process_group, pg_desc, seq, finding, rank, verdict, culprit, expected_ops,
       expected_sizes, ops, in_sizes, since_ns, last_op, last_group, last_seq, last_ns,
       blocked_in, root, reason, p2p_seq
FROM hang_verdict WHERE incident = $1
ORDER BY NOT root, since_ns, process_group, culprit IS NOT TRUE, rank;

-- name: hang_grid
-- Per rank and group of incident $1, the last collective sequence id started (else
-- enqueued) and completed, and its verdict where the group has one.
SELECT p.rank, p.process_group, p.pg_desc, p.last_enqueued_seq, p.last_started_seq,
       p.last_completed_seq, p.last_enqueued_op, p.pending, v.verdict, v.culprit, v.root
FROM collective_progress p
LEFT JOIN hang_verdict v ON v.incident = p.incident AND v.rank = p.rank
 AND v.process_group = p.process_group
WHERE p.incident = $1
ORDER BY p.rank, p.process_group;

-- name: hang_groups
-- The process groups of incident $1 and their members.
SELECT process_group, pg_desc, members, members_from, missing
FROM fr_groups WHERE incident = $1 ORDER BY process_group;

-- name: hang_rank_entries
-- The last $3 entries of rank $2 in incident $1, newest first.
SELECT step, process_group, pg_desc, seq_id, op, in_sizes, state, completed, ts_ns
FROM _fr_entries WHERE incident = $1 AND rank = $2
ORDER BY ts_ns DESC, step DESC LIMIT $3;

-- name: hang_rank_stacks
-- The threads of rank $2's stack dumps (of incident $1, or of no incident), with frames.
SELECT timeline_id, thread_index, thread, name, state, frames
FROM hang_stacks WHERE rank = $2 AND (incident = $1 OR incident IS NULL)
ORDER BY timeline_id, thread_index;

-- name: hang_rank_profile_end
-- The last $3 activities of rank $2's profiler traces that end before the incident's
-- first hung collective was enqueued ($1: that time, Unix ns; traces on their own clocks:
-- base_ns + ts_ns): the rank's timeline at its end before the hang.
SELECT r.timeline_id, m.name, m.category, r.base_ns + m.ts_ns AS start_ns,
       r.base_ns + m.ts_ns + m.dur_ns AS end_ns
FROM rank_traces r JOIN measured m USING (timeline_id)
WHERE r.rank = $2 AND r.base_ns + m.ts_ns + m.dur_ns <= $1
  AND m.category IN ('kernel', 'gpu_memcpy', 'gpu_memset', 'cpu_op', 'comm_call')
ORDER BY end_ns DESC LIMIT $3;

-- name: hang_has_profile
SELECT count(*) > 0 FROM timeline_records WHERE format IN ('kineto', 'jax_trace');

-- name: hang_dumps_among
-- How many of the timelines $1 (a list of ids) are Flight Recorder dumps.
SELECT count(*) FROM timeline_records
WHERE format = 'flight_recorder' AND list_contains(?::INTEGER[], timeline_id);

-- name: hang_incident_of
-- The incident of timeline $1: a dump's own, else (a stack dump) that of its rank's dumps.
SELECT COALESCE(
    (SELECT incident FROM fr_dumps WHERE timeline_id = $1),
    (SELECT min(d.incident) FROM fr_dumps d JOIN timelines t
       ON TRY_CAST(json_extract(t.attrs, '$.rank') AS BIGINT) = d.rank
     WHERE t.timeline_id = $1));

-- name: hang_compile_divergence
-- Compile ids whose TORCH_TRACE logs some of the ranks $1 (a list) lack.
SELECT compile_id, ranks, list_intersect(missing, $1::BIGINT[]) AS missing
FROM compile_divergence
WHERE len(list_intersect(missing, $1::BIGINT[])) > 0
ORDER BY compile_id;

-- Cache refresh (store/caches.py), per range of timelines: the dumps' caches of
-- schemas/55_flight_recorder.sql.
-- name: cache_drop_fr_dump_stats
DROP TABLE IF EXISTS _cache_fr_dump_stats;

-- name: cache_drop_fr_calls
DROP TABLE IF EXISTS _cache_fr_calls;

-- name: cache_clear_fr_dump_stats
DELETE FROM _cache_fr_dump_stats WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_fill_fr_dump_stats
INSERT INTO _cache_fr_dump_stats BY NAME
SELECT * FROM _fr_dump_stats_derived WHERE timeline_id BETWEEN ? AND ? ORDER BY timeline_id;

-- name: cache_clear_fr_calls
DELETE FROM _cache_fr_calls WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_ranges_fr_calls
-- The dumps of timelines $1..$2 in pieces of about 2**18 entries (_fr_cache_ranges).
SELECT * FROM _fr_cache_ranges($1, $2, 262144);

-- name: cache_fill_fr_calls
-- One piece: the dumps $2..$3 ($1 = $2, the piece's first dump).
INSERT INTO _cache_fr_calls BY NAME
SELECT * FROM _fr_calls_derived WHERE timeline_id BETWEEN $2 AND $3 AND $1 = $2
ORDER BY timeline_id, process_group, seq_id;
