-- The attribution's caches (store/caches.py ATTACHMENT_CACHES; schemas/43_profile_calls.sql,
-- 44_profile_attachments.sql), in this order (each derivation reads the caches before it).
-- Each is a view of its derivation until made a table (cache_make_*: by the first refresh
-- of a database, its schema's creation), then refreshed per trace: the rows of the
-- timelines $1..$2 cleared (cache_clear_*) and derived again (cache_fill_*), for the
-- traces whose candidates changed (call_candidates_changed), or for every timeline (the
-- whole range of ids: store/caches.py EVERY_TIMELINE). The order of the rows is the views'
-- keys, so that a query of one trace reads few of them.

-- name: attachment_caches_are_tables
-- (A FILTER, not a WHERE: DuckDB 2.0 takes about twice as long over duckdb_tables() with
-- the WHERE; docs/benchmarks.md, "The test suite".)
SELECT count(*) FILTER (WHERE schema_name = 'main' AND table_name IN (
    '_cache_output_nodes', '_cache_call_candidates', '_cache_call_graphs',
    '_cache_extern_ops', '_cache_triton_attachments', '_cache_kernel_attachments')) = 6
FROM duckdb_tables();

-- name: output_code_among
-- The output-code timelines among the timelines $1 (a list of ids), in order.
SELECT timeline_id FROM timeline_records
WHERE format = 'inductor_wrapper' AND list_contains($1::INTEGER[], timeline_id)
ORDER BY timeline_id;

-- name: compiled_calls_among
-- Whether the timelines $1 (a list of ids) hold a trace's compiled call.
SELECT EXISTS (SELECT 1 FROM _compiled_calls WHERE list_contains($1::INTEGER[], timeline_id));

-- name: attachment_rows_among
-- Whether the timelines $1 (a list of ids) hold rows of the caches, as a trace or as the
-- output code a trace's call matched (every row of the caches after _cache_output_nodes
-- stands on a candidate): timelines whose events changed or went.
SELECT EXISTS (SELECT 1 FROM _cache_output_nodes WHERE list_contains($1::INTEGER[], timeline_id))
    OR EXISTS (SELECT 1 FROM _cache_call_candidates
               WHERE list_contains($1::INTEGER[], timeline_id)
                  OR list_contains($1::INTEGER[], graph_timeline_id));

-- name: attachment_calls_and_code
-- Whether the database holds both a trace's compiled call and an output-code node: without
-- either, every cache but _cache_output_nodes is empty.
SELECT EXISTS (SELECT 1 FROM _compiled_calls) AND EXISTS (SELECT 1 FROM _cache_output_nodes);

-- name: traces_to_match
-- The first and last of the traces (timelines with a compiled call) whose candidates may
-- change with new output-code timelines $1..$2 and new traces $3..$4 (an empty range:
-- none); NULLs: none. By the names of their measured events (a CPU op's also with its
-- graph_<N>_ prefix removed) and of the graphs' nodes (profiler_name), from the matching
-- (43_profile_calls.sql, _call_candidates_derived): a call matched to a graph holds each
-- of the graph's Triton kernels (a GPU graph), or each of its extern ops (a CPU graph; its
-- C++ kernels where it has no extern op). A pair of a new graph or a new trace can match
-- anew; and as the names of the CPU graphs (cpu_names) make the sequence a CPU call is
-- matched on, a new CPU graph's name that no other CPU graph has changes the sequence of
-- the calls that hold it: that can undo their matches to other CPU graphs (it cannot make
-- one: those graphs lack the name), those of the traces holding the name and a CPU graph
-- among their candidates.
WITH graphs AS (
    SELECT timeline_id, cpu, len(extern_sig) > 0 AS has_extern,
           timeline_id BETWEEN $1 AND $2 AS new
    FROM _output_graphs
), needed AS (  -- per graph, the names that a call matched to it holds, each
    SELECT DISTINCT n.timeline_id AS graph, g.new, n.profiler_name
    FROM _output_nodes n JOIN graphs g USING (timeline_id)
    WHERE CASE WHEN NOT g.cpu THEN n.kind = 'triton'
               WHEN g.has_extern THEN n.kind = 'extern' ELSE n.kind = 'cpp' END
), new_cpu_names AS (
    SELECT n.profiler_name FROM _output_nodes n JOIN graphs g USING (timeline_id)
    WHERE g.new AND g.cpu AND n.kind IN ('cpp', 'extern')
    EXCEPT
    SELECT n.profiler_name FROM _output_nodes n JOIN graphs g USING (timeline_id)
    WHERE NOT g.new AND g.cpu AND n.kind IN ('cpp', 'extern')
), held AS (  -- each name a trace's events have (as it is, and as a CPU op's is matched)
    SELECT DISTINCT timeline_id, profiler_name
    FROM (SELECT timeline_id,
                 unnest([name, regexp_replace(name, '^graph_\d+_', '')]) AS profiler_name
          FROM measured WHERE timeline_id IN (SELECT timeline_id FROM _compiled_calls))
    WHERE timeline_id BETWEEN $3 AND $4
       OR profiler_name IN (SELECT profiler_name FROM needed WHERE new
                            UNION ALL SELECT profiler_name FROM new_cpu_names)
), pairs AS (  -- a trace and a graph whose needed names it holds, how many
    SELECT h.timeline_id, d.graph, any_value(d.new) AS new, count(*) AS held
    FROM held h JOIN needed d USING (profiler_name)
    WHERE d.new OR h.timeline_id BETWEEN $3 AND $4
    GROUP BY ALL
)
SELECT min(timeline_id), max(timeline_id) FROM (
    SELECT p.timeline_id FROM pairs p
    JOIN (SELECT graph, count(*) AS names FROM needed GROUP BY ALL) USING (graph)
    WHERE p.held = names
    UNION ALL
    SELECT timeline_id FROM held
    WHERE profiler_name IN (SELECT profiler_name FROM new_cpu_names)
      AND timeline_id IN (SELECT c.timeline_id FROM _call_candidates c
                          JOIN graphs g ON g.timeline_id = c.graph_timeline_id WHERE g.cpu));

-- name: call_candidates_derive
-- The candidates of the traces $1..$2 as the events give them now, set aside for
-- call_candidates_changed and cache_fill_call_candidates (DuckDB derives them once).
CREATE OR REPLACE TEMP TABLE _tlview_call_candidates AS
SELECT * FROM _call_candidates_derived WHERE timeline_id BETWEEN $1 AND $2;

-- name: call_candidates_changed
-- The first and last of the traces among $1..$2 whose candidates set aside
-- (call_candidates_derive) differ from those cached: a row (with its count) in one and not
-- in the other. NULLs: none.
SELECT min(timeline_id), max(timeline_id) FROM (
    (FROM _tlview_call_candidates
     EXCEPT ALL FROM _cache_call_candidates WHERE timeline_id BETWEEN $1 AND $2)
    UNION ALL
    (FROM _cache_call_candidates WHERE timeline_id BETWEEN $1 AND $2
     EXCEPT ALL FROM _tlview_call_candidates));

-- name: call_candidates_drop
DROP TABLE IF EXISTS temp._tlview_call_candidates;

-- name: cache_drop_output_nodes
DROP TABLE IF EXISTS _cache_output_nodes;

-- name: cache_make_output_nodes
DROP VIEW IF EXISTS _cache_output_nodes;
CREATE TABLE _cache_output_nodes AS SELECT * FROM _output_nodes_derived ORDER BY timeline_id, step;

-- name: cache_clear_output_nodes
DELETE FROM _cache_output_nodes WHERE timeline_id BETWEEN $1 AND $2;

-- name: cache_fill_output_nodes
INSERT INTO _cache_output_nodes BY NAME
SELECT * FROM _output_nodes_derived WHERE timeline_id BETWEEN $1 AND $2 ORDER BY timeline_id, step;

-- name: cache_drop_call_candidates
DROP TABLE IF EXISTS _cache_call_candidates;

-- name: cache_make_call_candidates
DROP VIEW IF EXISTS _cache_call_candidates;
CREATE TABLE _cache_call_candidates AS SELECT * FROM _call_candidates_derived ORDER BY timeline_id, call_seq, graph_timeline_id;

-- name: cache_clear_call_candidates
DELETE FROM _cache_call_candidates WHERE timeline_id BETWEEN $1 AND $2;

-- name: cache_fill_call_candidates
-- (from the candidates set aside by call_candidates_derive)
INSERT INTO _cache_call_candidates BY NAME
SELECT * FROM _tlview_call_candidates WHERE timeline_id BETWEEN $1 AND $2 ORDER BY timeline_id, call_seq, graph_timeline_id;

-- name: cache_drop_call_graphs
DROP TABLE IF EXISTS _cache_call_graphs;

-- name: cache_make_call_graphs
DROP VIEW IF EXISTS _cache_call_graphs;
CREATE TABLE _cache_call_graphs AS SELECT * FROM _call_graphs_derived ORDER BY timeline_id, call_seq, graph_timeline_id;

-- name: cache_clear_call_graphs
DELETE FROM _cache_call_graphs WHERE timeline_id BETWEEN $1 AND $2;

-- name: cache_fill_call_graphs
INSERT INTO _cache_call_graphs BY NAME
SELECT * FROM _call_graphs_derived WHERE timeline_id BETWEEN $1 AND $2 ORDER BY timeline_id, call_seq, graph_timeline_id;

-- name: cache_drop_extern_ops
DROP TABLE IF EXISTS _cache_extern_ops;

-- name: cache_make_extern_ops
DROP VIEW IF EXISTS _cache_extern_ops;
CREATE TABLE _cache_extern_ops AS SELECT * FROM _extern_ops_derived ORDER BY timeline_id, call_seq, op_seq, graph_timeline_id;

-- name: cache_clear_extern_ops
DELETE FROM _cache_extern_ops WHERE timeline_id BETWEEN $1 AND $2;

-- name: cache_fill_extern_ops
INSERT INTO _cache_extern_ops BY NAME
SELECT * FROM _extern_ops_derived WHERE timeline_id BETWEEN $1 AND $2 ORDER BY timeline_id, call_seq, op_seq, graph_timeline_id;

-- name: cache_drop_triton_attachments
DROP TABLE IF EXISTS _cache_triton_attachments;

-- name: cache_make_triton_attachments
DROP VIEW IF EXISTS _cache_triton_attachments;
CREATE TABLE _cache_triton_attachments AS SELECT * FROM _triton_attachments_derived ORDER BY timeline_id, seq, graph_timeline_id;

-- name: cache_clear_triton_attachments
DELETE FROM _cache_triton_attachments WHERE timeline_id BETWEEN $1 AND $2;

-- name: cache_fill_triton_attachments
INSERT INTO _cache_triton_attachments BY NAME
SELECT * FROM _triton_attachments_derived WHERE timeline_id BETWEEN $1 AND $2 ORDER BY timeline_id, seq, graph_timeline_id;

-- name: cache_drop_kernel_attachments
DROP TABLE IF EXISTS _cache_kernel_attachments;

-- name: cache_make_kernel_attachments
DROP VIEW IF EXISTS _cache_kernel_attachments;
CREATE TABLE _cache_kernel_attachments AS SELECT * FROM _kernel_attachments_derived ORDER BY timeline_id, seq, graph_timeline_id;

-- name: cache_clear_kernel_attachments
DELETE FROM _cache_kernel_attachments WHERE timeline_id BETWEEN $1 AND $2;

-- name: cache_fill_kernel_attachments
INSERT INTO _cache_kernel_attachments BY NAME
SELECT * FROM _kernel_attachments_derived WHERE timeline_id BETWEEN $1 AND $2 ORDER BY timeline_id, seq, graph_timeline_id;
