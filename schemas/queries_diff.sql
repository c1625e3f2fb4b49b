-- Named queries of comparing two runs (store/diff.py; views in schemas/60_diff_timelines.sql to 63_diff_sites.sql).

-- name: diff_timeline
SELECT timeline_id, name, format, _diff_kind(format) AS kind, device, title
FROM timelines WHERE timeline_id = ?;

-- name: diff_timelines_named
-- The timelines a user names (`tlview diff A B`): by its title (unique), else by its name;
-- title_match, copy_of say which.
SELECT timeline_id, title = $1 AS title_match, copy_of
FROM timelines WHERE title = $1 OR name = $1 ORDER BY timeline_id;

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

-- name: diff_peaks
-- Both peaks: bytes, step (event_index for snapshots) and the node there.
SELECT t.timeline_id,
       COALESCE(p.peak_bytes, ap.allocated_bytes) AS peak_bytes,
       COALESCE(p.peak_step, ap.event_index) AS peak_step,
       COALESCE(p.node, CASE WHEN ap.event_index IS NOT NULL THEN 'event ' || ap.event_index END)
           AS node
FROM timeline_records t
LEFT JOIN peak_memory p USING (timeline_id)
LEFT JOIN allocator_peak ap USING (timeline_id)
WHERE t.timeline_id = ?;

-- name: diff_peak_rows
SELECT status, delta_bytes, a_buffer, b_buffer, a_bytes, b_bytes, matched_by, what,
       a_producer, b_producer
FROM peak_diff(?, ?) WHERE status <> 'same' LIMIT ?;

-- name: diff_peak_rows_all
SELECT status, delta_bytes, a_buffer, b_buffer, a_bytes, b_bytes, matched_by, what,
       a_producer, b_producer
FROM peak_diff(?, ?);

-- name: diff_site_rows
SELECT site, delta_bytes, a_bytes_at_peak, b_bytes_at_peak, a_allocations, b_allocations
FROM site_diff(?, ?) WHERE delta_bytes <> 0 LIMIT ?;

-- name: diff_time_totals
-- Total measured time of both sides over the aligned steps, and how many of each side's
-- steps have a time (0: that side is not measured).
SELECT CAST(sum(a_time_ns) AS BIGINT), CAST(sum(b_time_ns) AS BIGINT),
       COALESCE(sum(a_launches), 0), COALESCE(sum(b_launches), 0)
FROM kernel_time_diff(?, ?);

-- name: diff_kernel_rows
SELECT method, a_kernel, b_kernel, a_launches, b_launches, a_time_ns, b_time_ns, delta_ns, share
FROM kernel_time_diff(?, ?) WHERE delta_ns <> 0 LIMIT ?;

-- name: diff_changed_nodes
-- The steps that are not the same on both sides, in order (the first $3 of them): the rows
-- of timeline_diff($1, $2), its columns that need no measured time. Read from
-- _diff_signatures, not through timeline_diff: its times (node_times, the whole profile
-- attachment) cost DuckDB ~1.4 CPU-s of planning on any pair, for columns not asked here.
WITH items AS MATERIALIZED (
    SELECT timeline_id, step, item FROM _diff_signatures WHERE timeline_id IN ($1, $2)
)
SELECT al.pos, al.method, al.a_step, al.b_step, ia.item AS a_node, ib.item AS b_node
FROM (SELECT * FROM alignments
      WHERE a_timeline_id = $1 AND b_timeline_id = $2 AND method <> 'same') al
LEFT JOIN items ia ON ia.timeline_id = $1 AND ia.step = al.a_step
LEFT JOIN items ib ON ib.timeline_id = $2 AND ib.step = al.b_step
ORDER BY al.pos LIMIT $3;

-- name: diff_curves
-- Both memory curves over the aligned positions (the TUI's compare mode, `tlview plot`).
SELECT pos, method, a_step, b_step, a_node, b_node, a_live_bytes, b_live_bytes,
       a_time_ns, b_time_ns
FROM timeline_diff(?, ?);

-- name: plot_items
-- One timeline's curve for `tlview plot`: per step its live bytes, measured time and
-- start (a trace's GPU events are drawn in time).
SELECT step, item, live_bytes, time_ns, ts_ns FROM _diff_items WHERE timeline_id = ?
ORDER BY step;

-- name: plot_ooms
-- A snapshot's OOMs for `tlview plot`: where, what was asked, what was held and free.
SELECT event_index, requested_bytes, segment_bytes, allocated_bytes, reserved_bytes,
       device_free
FROM ooms WHERE timeline_id = ? ORDER BY event_index;

-- name: alignment_temp_exists
SELECT count(*) FROM duckdb_tables() WHERE temporary AND table_name = 'alignments';
