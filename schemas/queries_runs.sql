-- Named queries of runs (store/runs.py, schemas/05_runs.sql).

-- name: run_roots
SELECT run_id, root FROM run_records ORDER BY run_id;

-- name: run_names
SELECT name FROM run_records;

-- name: next_run_id
SELECT COALESCE(max(run_id), 0) + 1 FROM run_records;

-- name: insert_run
INSERT INTO run_records VALUES (?, ?, ?, ?, ?, ?);

-- name: run_folders_unassigned
-- The folders of the sources that no registered run holds, in order of first source.
SELECT regexp_replace(s.path, '/[^/]*$', '') AS folder, min(s.source_id) AS first_source_id
FROM sources s JOIN source_runs r USING (source_id)
WHERE r.run_id IS NULL
GROUP BY folder ORDER BY min(s.source_id);

-- name: run_list
-- Every run with what it holds (runs) and its peak (run_peaks), in order.
SELECT r.*, p.peak_bytes, p.figure AS peak_figure, p.what AS peak_what,
       p.timeline_id AS peak_timeline_id
FROM runs r LEFT JOIN run_peaks p USING (run_id) ORDER BY r.run_id;

-- name: run_by_name_or_id
-- The run a user names: its id (as text) or its name.
SELECT run_id FROM run_records WHERE CAST(run_id AS VARCHAR) = ? OR name = ? ORDER BY run_id;
