-- Named queries used by tlview's Python code (store.Database.query).
-- Every value is a ? parameter; nothing is pasted into SQL text.

-- name: insert_source
INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: append_sources
-- Many sources at once (`tlview ingest -j`'s writer, store/parsed_files.py).
INSERT INTO sources SELECT * FROM _tlview_rows;

-- name: insert_timeline
INSERT INTO timeline_records VALUES (?, ?, ?, ?, ?, ?, ?);

-- name: insert_timeline_note
INSERT INTO timeline_notes VALUES (?, ?, ?);

-- name: append_timelines
INSERT INTO timeline_records SELECT * FROM _tlview_rows;

-- name: append_timeline_notes
INSERT INTO timeline_notes SELECT * FROM _tlview_rows;

-- name: append_events
-- {kind}: an event kind of ingest/records.py (the writer's own vocabulary, never input):
-- each kind's rows go to its own table (schemas/00_tables.sql), in that table's columns.
INSERT INTO events_{kind} SELECT * FROM _tlview_batch;

-- name: sources_same_path_size
-- Could the file at this path, of this size, have been ingested already? (If not, its
-- sha256 is computed beside its ingest instead of before it.)
SELECT count(*) FROM sources WHERE path = ? AND size = ?;

-- name: sources_by_sha
-- Re-ingest detection: the same file is the same path with the same bytes; another
-- file with the same bytes (two identical graphs of one folder) is a source of its own.
SELECT source_id, path, ingested_at FROM sources WHERE sha256 = ? ORDER BY source_id;

-- name: timeline_summaries
-- What `tlview info` and an ingest print, for every timeline with id in [$1, $2], in ONE
-- query (one per timeline took minutes on thousands): its title, run and copies, buffer
-- counts, the peak, the ingest's warnings and, for profiler traces, event and kernel
-- counts with the overlap; for a compiled graph's timeline, the graph and the timeline
-- that lists it (graphs: each graph listed once).
WITH gf AS (
    SELECT g.timeline_id AS graph_timeline_id, g.graph,
           struct_extract(g.f, 'timeline_id') AS timeline_id
    FROM (SELECT timeline_id, graph, unnest(forms) AS f FROM graphs) g
), b AS (
    SELECT timeline_id,
           count(*) FILTER (WHERE NOT is_input) AS n_buffers,
           count(*) FILTER (WHERE is_input) AS n_inputs,
           count(*) FILTER (WHERE bytes IS NULL AND NOT is_input) AS n_unknown_bytes
    FROM buffers WHERE timeline_id BETWEEN $1 AND $2 GROUP BY timeline_id
), m AS (
    SELECT timeline_id, count(*) AS n_events,
           count(*) FILTER (WHERE category IN ('kernel', 'comm')) AS n_kernels,
           CAST(COALESCE(sum(dur_ns) FILTER (WHERE category IN ('kernel', 'comm')), 0)
                AS BIGINT) AS kernel_ns,
           count(*) FILTER (WHERE category = 'comm') AS n_comm
    FROM events_kernel_measured
    WHERE timeline_id BETWEEN $1 AND $2
    GROUP BY timeline_id
), gl AS (
    SELECT timeline_id, correlation FROM events_kernel_measured
    WHERE timeline_id BETWEEN $1 AND $2 AND category = 'runtime' AND name LIKE '%GraphLaunch%'
), r AS (  -- kernels of CUDA-graph replays (as kernel_launches.graph_launch)
    SELECT k.timeline_id, count(DISTINCT k.correlation) AS n_replays,
           count(*) AS n_replay_kernels
    FROM events_kernel_measured k JOIN (SELECT DISTINCT * FROM gl) g USING (timeline_id, correlation)
    WHERE k.timeline_id BETWEEN $1 AND $2 AND k.category IN ('kernel', 'comm')
    GROUP BY k.timeline_id
), o AS (
    SELECT timeline_id, list(overlap_pct ORDER BY device) AS overlap_pct
    FROM comm_overlap_summary WHERE timeline_id BETWEEN $1 AND $2 GROUP BY timeline_id
), w AS (
    SELECT timeline_id,
           flatten(list(from_json(json_extract(attrs, '$.warnings'), '["VARCHAR"]')
                        ORDER BY rowid)) AS warnings
    FROM timeline_notes
    WHERE timeline_id BETWEEN $1 AND $2 AND json_extract(attrs, '$.warnings') IS NOT NULL
    GROUP BY timeline_id
)
SELECT t.timeline_id, t.name, t.format, t.device, t.n_steps, t.title, t.run_id,
       t.copy_of, t.source_id, t.source_path, t.source_kind, gf.graph_timeline_id, gf.graph,
       COALESCE(b.n_buffers, 0) AS n_buffers, COALESCE(b.n_inputs, 0) AS n_inputs,
       COALESCE(b.n_unknown_bytes, 0) AS n_unknown_bytes,
       p.peak_bytes, p.peak_step, p.node AS peak_node,
       COALESCE(m.n_events, 0) AS n_events, COALESCE(m.n_kernels, 0) AS n_kernels,
       COALESCE(m.kernel_ns, 0) AS kernel_ns, COALESCE(m.n_comm, 0) AS n_comm,
       o.overlap_pct, COALESCE(w.warnings, []) AS warnings,
       COALESCE(r.n_replays, 0) AS n_replays, COALESCE(r.n_replay_kernels, 0) AS n_replay_kernels
FROM timelines t
LEFT JOIN peak_memory p USING (timeline_id)
LEFT JOIN b USING (timeline_id)
LEFT JOIN m USING (timeline_id)
LEFT JOIN r USING (timeline_id)
LEFT JOIN o USING (timeline_id)
LEFT JOIN w USING (timeline_id)
LEFT JOIN gf USING (timeline_id)
WHERE t.timeline_id BETWEEN $1 AND $2
ORDER BY t.timeline_id;

-- name: replay_phases
-- What `tlview info` says beside the CUDA-graph replays of the traces with id in [$1, $2],
-- per trace: of the kernels the replays launched, those attached to a compiled node
-- (kernel_attachments); the replays CUDA graph trees run right after capturing (as
-- graph_replays.after_capture); the compiled calls that captured a graph or warmed it up
-- (call_graphs.mode).
WITH cg AS MATERIALIZED (
    SELECT timeline_id, call_seq, mode FROM call_graphs
    WHERE timeline_id BETWEEN $1 AND $2 AND class_rank = 1
), att AS (
    SELECT a.timeline_id, count(DISTINCT a.seq) AS attached
    FROM kernel_attachments a JOIN kernel_launches l USING (timeline_id, seq)
    WHERE a.timeline_id BETWEEN $1 AND $2 AND l.graph_launch
      AND l.category IN ('kernel', 'comm')
    GROUP BY a.timeline_id
), cap AS (
    SELECT l.timeline_id, count(DISTINCT l.correlation) AS after_capture
    FROM _call_launches l JOIN cg USING (timeline_id, call_seq)
    WHERE l.timeline_id BETWEEN $1 AND $2 AND l.graph_launch AND cg.mode = 'cuda_graph_capture'
    GROUP BY l.timeline_id
), calls AS (
    SELECT timeline_id, count(*) FILTER (WHERE mode = 'cuda_graph_capture') AS captures,
           count(*) FILTER (WHERE mode = 'cuda_graph_warmup') AS warmups
    FROM cg GROUP BY timeline_id
)
SELECT timeline_id, COALESCE(att.attached, 0) AS attached,
       COALESCE(cap.after_capture, 0) AS after_capture, COALESCE(calls.captures, 0) AS captures,
       COALESCE(calls.warmups, 0) AS warmups
FROM att FULL JOIN cap USING (timeline_id) FULL JOIN calls USING (timeline_id);

-- name: list_timelines
-- The API's timelines: the peak is the timeline's figure in `peaks` (a snapshot's in whole
-- blocks at its trace entry, a profiler trace's from its memory events), and says which.
SELECT t.timeline_id, t.name, t.format, t.device, t.n_steps, p.peak_bytes,
       p.at_step AS peak_step, p.figure AS peak_figure, p.what AS peak_what, t.title,
       t.run_id, t.run_name, t.copy_of
FROM timelines t LEFT JOIN peaks p USING (timeline_id)
ORDER BY t.timeline_id;

-- name: counts
SELECT (SELECT count(*) FROM sources), (SELECT count(*) FROM timeline_records),
       (SELECT count(*) FROM events);

-- name: info_counts
-- What `tlview info` counts: sources; timelines, each once (a compiled graph's copies in
-- other artifacts and TORCH_TRACE logs' own timelines not counted, as runs.n_timelines);
-- those left out; events.
SELECT (SELECT count(*) FROM sources), t.listed, t.left_out, (SELECT count(*) FROM events)
FROM (SELECT count(*) FILTER (WHERE copy_of IS NULL AND format <> 'torch_trace') AS listed,
             count(*) FILTER (WHERE copy_of IS NOT NULL OR format = 'torch_trace') AS left_out
      FROM timelines) t;

-- name: next_source_id
SELECT COALESCE(max(source_id), 0) + 1 FROM sources;

-- name: source_path
-- The path of source $1 (its line in `tlview ingest --from-shards`).
SELECT path FROM sources WHERE source_id = ?;

-- name: source_sha256s
-- Every source's path and content hash: the files a parallel ingest skips as known.
SELECT path, sha256 FROM sources;

-- name: sources_from
-- The paths of the sources from id $1 on: what an interrupted ingest had committed.
SELECT path FROM sources WHERE source_id >= ? ORDER BY source_id;

-- name: next_timeline_id
SELECT COALESCE(max(timeline_id), 0) + 1 FROM timeline_records;

-- name: meta_rows
SELECT key, value FROM tlview_meta;

-- name: events_is_a_table
-- A database before schema v4 keeps every event in one table named events.
SELECT count(*) FROM duckdb_tables() WHERE table_name = 'events' AND schema_name = 'main';

-- name: get_meta
SELECT value FROM tlview_meta WHERE key = ?;

-- name: set_schema_version
INSERT OR REPLACE INTO tlview_meta VALUES ('schema_version', ?), ('views_sha', ?);

-- Cache refresh, per timeline, in dependency order (see store/caches.py).
-- name: cache_clear_buffers
DELETE FROM _cache_buffers WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_fill_buffers
-- In the events' order (each refresh appends its timelines' rows), not sorted: an ORDER BY
-- alloc_step sorted every wide row (attrs and all) under the ingest's memory cap, most of
-- the fill on a large XLA dump, and the queries by step (live_at, the TUI's holders) are
-- as fast either way (figures: docs/benchmarks.md, the table of choices).
INSERT INTO _cache_buffers BY NAME
SELECT * FROM _buffers_derived WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_clear_memory_curve
DELETE FROM _cache_memory_curve WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_fill_memory_curve
-- _memory_curve_derived with less work: deltas that are zero everywhere left out, and a
-- shared allocation's segments merged into islands by ONE window (a new island where a
-- value starts after the running end of those before it; an island ends at the running
-- end before the next, or at the segment's last row), which equals the view's two
-- windows and GROUP BY when no value ends before it starts; allocations holding such a
-- value take the view's way. The per-step sums are cast to BIGINT before the join and
-- the window (HUGEINT states doubled what they carry: at 1.6M steps they spilled).
-- The slow way repeats _memory_deltas' islands on purpose: read from a view of them, the
-- view's windows ran over every segment of the timelines (DuckDB pushes the timeline range
-- through them but not the SEMI JOIN with `inverted`), which made a large XLA dump's
-- fill much slower even with no inverted value at all (docs/benchmarks.md).
INSERT INTO _cache_memory_curve BY NAME
WITH c AS (
    SELECT timeline_id, alloc_step, last_step, bytes, allocation, "offset" FROM _counted
    WHERE timeline_id BETWEEN $1 AND $2
), inverted AS (
    SELECT DISTINCT timeline_id, allocation FROM c
    WHERE allocation IS NOT NULL AND last_step < alloc_step
), segs AS (
    SELECT * FROM _segments WHERE timeline_id BETWEEN $1 AND $2
), fast AS (
    SELECT s.*,
           max(last_step) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end,
           max(last_step) OVER (w ROWS UNBOUNDED PRECEDING) AS cur_end,
           lead(alloc_step) OVER w IS NULL AS is_last
    FROM segs s ANTI JOIN inverted USING (timeline_id, allocation)
    WINDOW w AS (PARTITION BY timeline_id, allocation, lo ORDER BY alloc_step, last_step)
), slow AS (
    WITH ordered AS (
        SELECT *, max(last_step) OVER (
                   PARTITION BY timeline_id, allocation, lo ORDER BY alloc_step, last_step
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
        FROM segs SEMI JOIN inverted USING (timeline_id, allocation)
    ), islands AS (
        SELECT *, sum(CASE WHEN prev_end IS NULL OR alloc_step > prev_end + 1 THEN 1 ELSE 0 END)
                  OVER (PARTITION BY timeline_id, allocation, lo ORDER BY alloc_step, last_step
                        ROWS UNBOUNDED PRECEDING) AS island
        FROM ordered
    ), merged AS (
        SELECT timeline_id, allocation, lo, hi, min(alloc_step) AS s, max(last_step) AS e
        FROM islands GROUP BY timeline_id, allocation, lo, hi, island
    )
    SELECT timeline_id, s AS step, hi - lo AS delta FROM merged
    UNION ALL
    SELECT timeline_id, e + 1, lo - hi FROM merged
), d0 AS (
    SELECT timeline_id, alloc_step AS step,
           CASE WHEN allocation IS NULL THEN COALESCE(bytes, 0) ELSE 0 END AS delta,
           CASE WHEN bytes IS NULL THEN 1 ELSE 0 END AS unknown_delta,
           COALESCE(bytes, 0) AS alloc_bytes, 0 AS freed_bytes
    FROM c
    UNION ALL
    SELECT timeline_id, last_step + 1,
           CASE WHEN allocation IS NULL THEN -COALESCE(bytes, 0) ELSE 0 END,
           CASE WHEN bytes IS NULL THEN -1 ELSE 0 END, 0, 0
    FROM c WHERE allocation IS NULL OR bytes IS NULL
    UNION ALL
    SELECT timeline_id, last_step, 0, 0, 0, COALESCE(bytes, 0) FROM c
    UNION ALL
    SELECT timeline_id, alloc_step, hi - lo, 0, 0, 0 FROM fast
    WHERE prev_end IS NULL OR alloc_step > prev_end + 1
    UNION ALL
    SELECT timeline_id, prev_end + 1, lo - hi, 0, 0, 0 FROM fast
    WHERE prev_end IS NOT NULL AND alloc_step > prev_end + 1
    UNION ALL
    SELECT timeline_id, cur_end + 1, lo - hi, 0, 0, 0 FROM fast WHERE is_last
    UNION ALL
    SELECT timeline_id, step, delta, 0, 0, 0 FROM slow
), d AS (
    SELECT timeline_id, step, CAST(sum(delta) AS BIGINT) AS delta,
           CAST(sum(unknown_delta) AS BIGINT) AS unknown_delta,
           CAST(sum(alloc_bytes) AS BIGINT) AS alloc_bytes,
           CAST(sum(freed_bytes) AS BIGINT) AS freed_bytes
    FROM d0 GROUP BY timeline_id, step
)
SELECT n.timeline_id, n.step, n.node,
       CAST(sum(COALESCE(d.delta, 0)) OVER w AS BIGINT) AS live_bytes,
       CAST(COALESCE(d.alloc_bytes, 0) AS BIGINT) AS alloc_bytes,
       CAST(COALESCE(d.freed_bytes, 0) AS BIGINT) AS freed_bytes,
       CAST(sum(COALESCE(d.unknown_delta, 0)) OVER w AS BIGINT) AS unknown_live
FROM (SELECT timeline_id, step, node FROM events_node_scheduled
      WHERE timeline_id BETWEEN $1 AND $2) n
LEFT JOIN d USING (timeline_id, step)
WINDOW w AS (PARTITION BY n.timeline_id ORDER BY n.step ROWS UNBOUNDED PRECEDING)
ORDER BY timeline_id, step;

-- name: cache_clear_peak
DELETE FROM _cache_peak WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_fill_peak
-- _peak_derived by aggregates (the view's row_number sorts the whole curve): the largest
-- live_bytes, then the first step that reaches it.
INSERT INTO _cache_peak BY NAME
WITH m AS (
    SELECT timeline_id, max(live_bytes) AS peak_bytes FROM memory_curve
    WHERE timeline_id BETWEEN $1 AND $2 GROUP BY timeline_id
)
SELECT c.timeline_id, arg_min(c.step, c.step) AS peak_step, m.peak_bytes,
       arg_min(c.node, c.step) AS node
FROM memory_curve c JOIN m ON c.timeline_id = m.timeline_id AND c.live_bytes = m.peak_bytes
WHERE c.timeline_id BETWEEN $1 AND $2
GROUP BY c.timeline_id, m.peak_bytes
ORDER BY c.timeline_id;

-- name: all_timeline_ids
SELECT timeline_id FROM timeline_records ORDER BY timeline_id;

-- name: current_memory_limit
SELECT current_setting('memory_limit');

-- name: current_threads
SELECT current_setting('threads');

-- name: ingest_settings
-- What an ingest's transaction changes and restores (store/writer.py IngestTransaction).
SELECT current_setting('memory_limit'), current_setting('threads');

-- Content digests of sources $1 (a list of ids): what each ingest wrote, independent of ids
-- and of when (tests and benchmarks compare them before and after a change to an
-- ingester), as (source_id, format, attrs, events, timelines, stacks). NULL columns are
-- left out of each event's JSON, so a column added to the table later leaves the digests
-- of inputs that do not use it unchanged. stacks (interned frames and stacks: allocator
-- snapshots) is NULL where the source interned none. One statement for many sources:
-- its planning (the events view's every kind) is most of its cost on a small source.
-- name: digest_sources
SELECT s.source_id, s.format, s.attrs,
       (SELECT sha256(COALESCE(string_agg(
                   md5(regexp_replace(to_json(x)::VARCHAR, '"\w+":null,?', '', 'g')), ''
                   ORDER BY x.seq), ''))
        FROM (SELECT e.* EXCLUDE (source_id, timeline_id), t.key AS timeline_key
              FROM events e JOIN timeline_records t USING (timeline_id)
              WHERE e.source_id = s.source_id) x) AS events,
       (SELECT sha256(COALESCE(string_agg(md5(to_json(x)::VARCHAR), '' ORDER BY x.key, x.n), ''))
        FROM (SELECT t.key, t.name, t.format, t.device, t.attrs, n.attrs AS note,
                     row_number() OVER (PARTITION BY t.key ORDER BY n.attrs) AS n
              FROM timeline_records t LEFT JOIN timeline_notes n USING (timeline_id)
              WHERE t.source_id = s.source_id) x) AS timelines,
       CASE WHEN NOT EXISTS (FROM stacks k WHERE k.source_id = s.source_id)
                 AND NOT EXISTS (FROM frames f WHERE f.source_id = s.source_id) THEN NULL
            ELSE sha256(
                COALESCE((SELECT string_agg(md5(to_json(f)::VARCHAR), '' ORDER BY f.frame_id)
                          FROM (SELECT frame_id, filename, line, name, attrs FROM frames
                                WHERE source_id = s.source_id) f), '') ||
                COALESCE((SELECT string_agg(md5(to_json(k)::VARCHAR), '' ORDER BY k.stack_id)
                          FROM (SELECT stack_id, frame_ids FROM stacks
                                WHERE source_id = s.source_id) k), ''))
       END AS stacks
FROM sources s WHERE list_contains($1::INTEGER[], s.source_id)
ORDER BY s.source_id;

-- Storage format (store/storage.py): the file's version tag, and the rewrite of a file
-- in an older format through COPY FROM DATABASE (tables, views and macros).
-- name: storage_version
SELECT tags['storage_version'] FROM duckdb_databases() WHERE database_name = current_database();

-- name: attach_original
ATTACH ? AS tlview_original;

-- name: checkpoint_original
CHECKPOINT tlview_original;

-- name: attach_converted
ATTACH ? AS tlview_converted (STORAGE_VERSION ?);

-- name: copy_to_converted
COPY FROM DATABASE tlview_original TO tlview_converted;

-- name: original_tables
SELECT table_name FROM duckdb_tables() WHERE database_name = 'tlview_original' ORDER BY 1;

-- name: compare_table_counts
SELECT (SELECT count(*) FROM query_table(?)), (SELECT count(*) FROM query_table(?));

-- name: detach_converted
DETACH tlview_converted;

-- Which timelines' events a `tlview sql --write` changed (store/caches.py).
-- name: events_fingerprint
SELECT timeline_id, count(*), bit_xor(hash(e)) FROM events e GROUP BY timeline_id;
