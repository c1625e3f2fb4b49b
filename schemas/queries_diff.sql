-- Named queries of comparing two runs (store/diff.py; views in schemas/60_diff.sql).

-- name: diff_timeline
SELECT timeline_id, name, format, _diff_kind(format) AS kind, device
FROM timelines WHERE timeline_id = ?;

-- name: diff_timelines_named
SELECT timeline_id FROM timeline_records WHERE name = ? ORDER BY timeline_id;

-- name: diff_signatures
-- What the alignment reads of one timeline, in order.
SELECT step, sig, loose_sig FROM _diff_signatures WHERE timeline_id = ? ORDER BY step;

-- name: alignment_pair
SELECT version, kind, a_items, b_items, same, changed, deleted, inserted
FROM alignment_pairs WHERE a_timeline_id = ? AND b_timeline_id = ?;

-- name: alignment_delete_rows
DELETE FROM alignments WHERE a_timeline_id = ? AND b_timeline_id = ?;

-- name: alignment_delete_pair
DELETE FROM alignment_pairs WHERE a_timeline_id = ? AND b_timeline_id = ?;

-- name: alignment_append_rows
INSERT INTO alignments SELECT * FROM _tlview_alignment;

-- name: alignment_insert_pair
INSERT INTO alignment_pairs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- name: alignment_pairs_touching
-- Stored pairs with either timeline in [?, ?] (caches.refresh recomputes them).
SELECT a_timeline_id, b_timeline_id FROM alignment_pairs
WHERE a_timeline_id BETWEEN $1 AND $2 OR b_timeline_id BETWEEN $1 AND $2
ORDER BY 1, 2;

-- name: alignment_temp_tables
-- A read-only session's alignments: temporary tables of the same names, which DuckDB
-- reads before the database's own (the views and macros then see them).
CREATE TEMP TABLE IF NOT EXISTS alignments (
    a_timeline_id INTEGER NOT NULL, b_timeline_id INTEGER NOT NULL, pos BIGINT NOT NULL,
    a_step BIGINT, b_step BIGINT, method VARCHAR NOT NULL);
CREATE TEMP TABLE IF NOT EXISTS alignment_pairs (
    a_timeline_id INTEGER NOT NULL, b_timeline_id INTEGER NOT NULL, version INTEGER NOT NULL,
    kind VARCHAR NOT NULL, a_items BIGINT NOT NULL, b_items BIGINT NOT NULL,
    same BIGINT NOT NULL, changed BIGINT NOT NULL, deleted BIGINT NOT NULL,
    inserted BIGINT NOT NULL);
