-- Named queries used by tlview's Python code (store.Database.query).
-- Every value is a ? parameter; nothing is pasted into SQL text.

-- name: insert_source
INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?);

-- name: insert_timeline
INSERT INTO timeline_records VALUES (?, ?, ?, ?, ?, ?, ?);

-- name: insert_timeline_note
INSERT INTO timeline_notes VALUES (?, ?, ?);

-- name: append_timelines
INSERT INTO timeline_records SELECT * FROM _tlview_rows;

-- name: append_timeline_notes
INSERT INTO timeline_notes SELECT * FROM _tlview_rows;

-- name: append_events
INSERT INTO events SELECT * FROM _tlview_batch;

-- name: source_by_sha
SELECT source_id, path, ingested_at FROM sources WHERE sha256 = ? ORDER BY source_id LIMIT 1;

-- name: timeline_summary
SELECT t.timeline_id, t.name, t.format, t.device, t.n_steps,
       (SELECT count(*) FROM buffers b WHERE b.timeline_id = t.timeline_id AND NOT b.is_input) AS n_buffers,
       (SELECT count(*) FROM buffers b WHERE b.timeline_id = t.timeline_id AND b.is_input) AS n_inputs,
       (SELECT count(*) FROM buffers b WHERE b.timeline_id = t.timeline_id AND b.bytes IS NULL AND NOT b.is_input) AS n_unknown_bytes,
       p.peak_bytes, p.peak_step, p.node AS peak_node
FROM timelines t LEFT JOIN peak_memory p USING (timeline_id)
WHERE t.timeline_id = ?;

-- name: list_timelines
SELECT t.timeline_id, t.name, t.format, t.device, t.n_steps, p.peak_bytes, p.peak_step
FROM timelines t LEFT JOIN peak_memory p USING (timeline_id)
ORDER BY t.timeline_id;

-- name: counts
SELECT (SELECT count(*) FROM sources), (SELECT count(*) FROM timeline_records),
       (SELECT count(*) FROM events);

-- name: timeline_warnings
SELECT unnest(from_json(json_extract(attrs, '$.warnings'), '["VARCHAR"]'))
FROM timeline_notes
WHERE timeline_id = ? AND json_extract(attrs, '$.warnings') IS NOT NULL;

-- name: next_source_id
SELECT COALESCE(max(source_id), 0) + 1 FROM sources;

-- name: next_timeline_id
SELECT COALESCE(max(timeline_id), 0) + 1 FROM timeline_records;

-- name: has_meta_table
SELECT count(*) FROM information_schema.tables WHERE table_name = 'tlview_meta';

-- name: get_meta
SELECT value FROM tlview_meta WHERE key = ?;

-- name: set_schema_version
INSERT OR REPLACE INTO tlview_meta VALUES ('schema_version', ?), ('views_sha', ?);

-- name: timeline_ids
SELECT timeline_id FROM timelines ORDER BY timeline_id;

-- Cache refresh, per timeline, in dependency order (see store/caches.py).
-- name: cache_clear_buffers
DELETE FROM _cache_buffers WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_fill_buffers
INSERT INTO _cache_buffers BY NAME
SELECT * FROM _buffers_derived WHERE timeline_id BETWEEN ? AND ? ORDER BY timeline_id, alloc_step, buffer;

-- name: cache_clear_memory_curve
DELETE FROM _cache_memory_curve WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_fill_memory_curve
INSERT INTO _cache_memory_curve BY NAME
SELECT * FROM _memory_curve_derived WHERE timeline_id BETWEEN ? AND ?
ORDER BY timeline_id, step;

-- name: cache_clear_peak
DELETE FROM _cache_peak WHERE timeline_id BETWEEN ? AND ?;

-- name: cache_fill_peak
INSERT INTO _cache_peak BY NAME SELECT * FROM _peak_derived WHERE timeline_id BETWEEN ? AND ?;

-- name: all_timeline_ids
SELECT timeline_id FROM timeline_records ORDER BY timeline_id;

-- name: current_memory_limit
SELECT current_setting('memory_limit');
