-- Runs: what one incident left, the unit a person works with (README "Runs").
--
-- A run is the folder the user named to `tlview ingest` (a TORCH_COMPILE_DEBUG tree, a
-- rank's folder, a job's folder of rank traces), the common folder of the files named
-- together from one folder, or the one file named alone. Every source belongs to exactly
-- one run: the run whose root is the source's path or the nearest folder above it, among
-- the runs registered before the source was written (so a run named later never takes
-- the sources of an earlier one). A source under no registered root (an ingest through
-- the API or the store, a database written before runs existed) is given a run of its
-- folder, or of the folder above it that another such source is in, in the same
-- transaction (store/runs.py). Rows are only ever added.

-- run_records: one row per run.
--   run_id; name: unique in the database, from the root's last component (a file's
--   without its extensions), else with its parent folder (`jobA/compiled_train`), else
--   numbered (`compiled_train (2)`); root: the absolute path the user named (a folder
--   or a file); first_source_id: the first source id the run could take (the database's
--   next source id when it was registered); created_at; attrs: how it was made
--   ({"from": "named" | "folder", "skipped": {kind: files} the files of a named folder
--   that tlview does not read, by kind}).
CREATE TABLE IF NOT EXISTS run_records (
    run_id          INTEGER PRIMARY KEY,
    name            VARCHAR NOT NULL,
    root            VARCHAR NOT NULL,
    first_source_id INTEGER NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    attrs           JSON
);

-- _source_ancestors: each source's path and every folder above it (an equality join with
-- the runs' roots, linear in sources x depth).
CREATE OR REPLACE VIEW _source_ancestors AS
SELECT source_id, path AS root, 0 AS up FROM sources
UNION ALL
SELECT s.source_id, array_to_string(list_slice(s.parts, 1, k), '/'), len(s.parts) - k
FROM (SELECT source_id, string_split(path, '/') AS parts FROM sources) s,
     LATERAL (SELECT unnest(range(2, len(s.parts))) AS k);

-- source_runs: the run of every source (see above).
--   source_id, run_id; NULL run_id only for a source written without one (a shard set).
CREATE OR REPLACE VIEW source_runs AS
SELECT s.source_id, arg_min(r.run_id, a.up) AS run_id
FROM sources s
LEFT JOIN (_source_ancestors a JOIN run_records r
           ON r.root = a.root AND r.first_source_id <= a.source_id) USING (source_id)
GROUP BY s.source_id
ORDER BY s.source_id;

-- timeline_runs: each timeline's run: timeline_id, source_id, run_id (a light join for a
-- query that needs only that; the timelines view says it too, with titles and copies).
CREATE OR REPLACE VIEW timeline_runs AS
SELECT t.timeline_id, t.source_id, r.run_id
FROM timeline_records t JOIN source_runs r USING (source_id);

-- _source_kinds: what kind of artifact each source is, in words.
--   source_kind: output_code.py | torch log | TORCH_TRACE | scheduler IR | profiler trace
--   | JAX profiler trace | allocator snapshot | XLA buffer assignment | JAX memory profile
--   | Flight Recorder dump | stack dump | (else its format).
CREATE OR REPLACE VIEW _source_kinds AS
SELECT source_id, path, format,
       CASE format
           WHEN 'torch_log' THEN CASE WHEN regexp_matches(path, '\.py$') THEN 'output_code.py'
                                      ELSE 'torch log' END
           WHEN 'torch_trace' THEN 'TORCH_TRACE'
           WHEN 'inductor_ir' THEN 'scheduler IR'
           WHEN 'kineto' THEN 'profiler trace'
           WHEN 'jax_trace' THEN 'JAX profiler trace'
           WHEN 'cuda_snapshot' THEN 'allocator snapshot'
           WHEN 'xla_buffer_assignment' THEN 'XLA buffer assignment'
           WHEN 'jax_memory_profile' THEN 'JAX memory profile'
           WHEN 'flight_recorder' THEN 'Flight Recorder dump'
           WHEN 'stack_dump' THEN 'stack dump'
           ELSE format END AS source_kind
FROM sources;

-- _strip_ext(name): a file name without the extensions of the dumps tlview reads (also
-- where words follow it: `oom.pickle.gz cuda:0` -> `oom cuda:0`).
CREATE OR REPLACE MACRO _strip_ext(x) AS
    regexp_replace(x, '(\.pt\.trace)?\.(json|pickle|pkl|txt|log|py|prof)(\.gz)?(\s|$)', '\4');

-- _timeline_labels: per timeline, the words its title is made of (timelines.title).
--   run_id, run_name; subject: the compiled graph (its AOT id, e.g. 0_forward; a
--   scheduler IR's and an output_code.py's from its TORCH_COMPILE_DEBUG folder,
--   model__1_forward_2.1, where the folder is one: two graphs whose code is the same
--   bytes state the same AOT id inside), the rank of a profiler trace,
--   else the timeline's name; form: output code | scheduler IR | FX graph | profiler
--   trace | allocator snapshot | compile log | XLA buffer assignment | JAX memory profile |
--   Flight Recorder dump | stack dump | (its format);
--   label: the form and, where the form came inside another artifact, that artifact
--   (`output code in torch log`, `FX graph in TORCH_TRACE`); source_kind (_source_kinds);
--   rank: the rank its artifact states.
CREATE OR REPLACE VIEW _timeline_labels AS
WITH n AS (
    SELECT timeline_id, any_value(json_extract_string(attrs, '$.aot_id')) AS aot_id
    FROM timeline_notes GROUP BY timeline_id
), t AS (
    SELECT t.timeline_id, t.name, t.format, t.device, t.source_id, k.path, k.source_kind,
           COALESCE(json_extract_string(t.attrs, '$.aot_id'), n.aot_id) AS aot_id,
           TRY_CAST(json_extract(t.attrs, '$.rank') AS INTEGER) AS rank
    FROM timeline_records t JOIN _source_kinds k USING (source_id) LEFT JOIN n USING (timeline_id)
), l AS (
    SELECT t.*, sr.run_id,
           CASE WHEN t.format IN ('inductor_ir', 'inductor_wrapper')
                     AND regexp_matches(t.path, '__[0-9]+_[a-z]+_[0-9.]+/[^/]+$')
                THEN regexp_extract(t.path, '__([0-9]+_[a-z]+)_[0-9.]+/[^/]+$', 1)
                WHEN t.format IN ('inductor_wrapper', 'aot_fx_graph') AND t.aot_id IS NOT NULL
                THEN t.aot_id
                WHEN t.format = 'inductor_ir' THEN _strip_ext(t.name)
                WHEN t.format IN ('kineto', 'jax_trace') AND t.rank IS NOT NULL
                THEN 'rank ' || t.rank
                ELSE _strip_ext(t.name) END AS subject,
           CASE t.format
               WHEN 'inductor_wrapper' THEN 'output code'
               WHEN 'inductor_ir' THEN CASE WHEN t.path LIKE '%pre_fusion%'
                                            THEN 'scheduler IR pre-fusion' ELSE 'scheduler IR' END
               WHEN 'aot_fx_graph' THEN 'FX graph'
               WHEN 'kineto' THEN 'profiler trace'
               WHEN 'jax_trace' THEN 'JAX profiler trace'
               WHEN 'cuda_snapshot' THEN 'allocator snapshot'
               WHEN 'torch_trace' THEN 'compile log'
               WHEN 'xla_buffer_assignment' THEN 'XLA buffer assignment'
               WHEN 'jax_memory_profile' THEN 'JAX memory profile'
               WHEN 'flight_recorder' THEN 'Flight Recorder dump'
               WHEN 'stack_dump' THEN 'stack dump'
               ELSE t.format END AS form
    FROM t LEFT JOIN source_runs sr USING (source_id)
)
SELECT l.timeline_id, l.run_id,
       COALESCE(r.name, regexp_extract(l.path, '([^/]+)/[^/]*$', 1)) AS run_name,
       l.subject, l.form,
       CASE WHEN l.format IN ('inductor_wrapper', 'aot_fx_graph')
                 AND l.source_kind IN ('torch log', 'TORCH_TRACE')
            THEN l.form || ' in ' || l.source_kind ELSE l.form END AS label,
       l.source_kind, l.rank
FROM l LEFT JOIN run_records r USING (run_id);
