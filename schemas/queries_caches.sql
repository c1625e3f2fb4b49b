-- The attribution's caches (store/caches.py ATTACHMENT_CACHES; schemas/43_profile_calls.sql,
-- 44_profile_attachments.sql), rebuilt whole, in this order (each derivation reads the caches
-- before it). Each is a view of its derivation until made a table (cache_make_*: by the first
-- refresh of a database, its schema's creation), then refilled (cache_fill_*). The order of
-- the rows is the views' keys, so that a query of one trace reads few of them.

-- name: attachment_caches_are_tables
SELECT count(*) = 6 FROM duckdb_tables()
WHERE schema_name = 'main'
  AND table_name IN ('_cache_output_nodes', '_cache_call_candidates', '_cache_call_graphs',
                     '_cache_extern_ops', '_cache_triton_attachments',
                     '_cache_kernel_attachments');

-- name: attachment_sources_among
-- Whether the timelines $1 (a list of ids) hold what the attribution reads (an output-code
-- timeline, a trace's compiled call) or rows of the caches (timelines whose events changed).
SELECT EXISTS (SELECT 1 FROM timeline_records
               WHERE format = 'inductor_wrapper' AND list_contains($1::INTEGER[], timeline_id))
    OR EXISTS (SELECT 1 FROM _compiled_calls WHERE list_contains($1::INTEGER[], timeline_id))
    OR EXISTS (SELECT 1 FROM _cache_output_nodes WHERE list_contains($1::INTEGER[], timeline_id))
    OR EXISTS (SELECT 1 FROM _cache_call_candidates
               WHERE list_contains($1::INTEGER[], timeline_id)
                  OR list_contains($1::INTEGER[], graph_timeline_id));

-- name: attachment_calls_and_code
-- Whether the database holds both a trace's compiled call and an output-code node: without
-- either, every cache but _cache_output_nodes is empty.
SELECT EXISTS (SELECT 1 FROM _compiled_calls) AND EXISTS (SELECT 1 FROM _cache_output_nodes);

-- name: cache_drop_output_nodes
DROP TABLE IF EXISTS _cache_output_nodes;

-- name: cache_make_output_nodes
DROP VIEW IF EXISTS _cache_output_nodes;
CREATE TABLE _cache_output_nodes AS SELECT * FROM _output_nodes_derived ORDER BY timeline_id, step;

-- name: cache_empty_output_nodes
DELETE FROM _cache_output_nodes;

-- name: cache_refill_output_nodes
DELETE FROM _cache_output_nodes;
INSERT INTO _cache_output_nodes BY NAME SELECT * FROM _output_nodes_derived ORDER BY timeline_id, step;

-- name: cache_drop_call_candidates
DROP TABLE IF EXISTS _cache_call_candidates;

-- name: cache_make_call_candidates
DROP VIEW IF EXISTS _cache_call_candidates;
CREATE TABLE _cache_call_candidates AS SELECT * FROM _call_candidates_derived ORDER BY timeline_id, call_seq, graph_timeline_id;

-- name: cache_empty_call_candidates
DELETE FROM _cache_call_candidates;

-- name: cache_refill_call_candidates
DELETE FROM _cache_call_candidates;
INSERT INTO _cache_call_candidates BY NAME SELECT * FROM _call_candidates_derived ORDER BY timeline_id, call_seq, graph_timeline_id;

-- name: cache_drop_call_graphs
DROP TABLE IF EXISTS _cache_call_graphs;

-- name: cache_make_call_graphs
DROP VIEW IF EXISTS _cache_call_graphs;
CREATE TABLE _cache_call_graphs AS SELECT * FROM _call_graphs_derived ORDER BY timeline_id, call_seq, graph_timeline_id;

-- name: cache_empty_call_graphs
DELETE FROM _cache_call_graphs;

-- name: cache_refill_call_graphs
DELETE FROM _cache_call_graphs;
INSERT INTO _cache_call_graphs BY NAME SELECT * FROM _call_graphs_derived ORDER BY timeline_id, call_seq, graph_timeline_id;

-- name: cache_drop_extern_ops
DROP TABLE IF EXISTS _cache_extern_ops;

-- name: cache_make_extern_ops
DROP VIEW IF EXISTS _cache_extern_ops;
CREATE TABLE _cache_extern_ops AS SELECT * FROM _extern_ops_derived ORDER BY timeline_id, call_seq, op_seq, graph_timeline_id;

-- name: cache_empty_extern_ops
DELETE FROM _cache_extern_ops;

-- name: cache_refill_extern_ops
DELETE FROM _cache_extern_ops;
INSERT INTO _cache_extern_ops BY NAME SELECT * FROM _extern_ops_derived ORDER BY timeline_id, call_seq, op_seq, graph_timeline_id;

-- name: cache_drop_triton_attachments
DROP TABLE IF EXISTS _cache_triton_attachments;

-- name: cache_make_triton_attachments
DROP VIEW IF EXISTS _cache_triton_attachments;
CREATE TABLE _cache_triton_attachments AS SELECT * FROM _triton_attachments_derived ORDER BY timeline_id, seq, graph_timeline_id;

-- name: cache_empty_triton_attachments
DELETE FROM _cache_triton_attachments;

-- name: cache_refill_triton_attachments
DELETE FROM _cache_triton_attachments;
INSERT INTO _cache_triton_attachments BY NAME SELECT * FROM _triton_attachments_derived ORDER BY timeline_id, seq, graph_timeline_id;

-- name: cache_drop_kernel_attachments
DROP TABLE IF EXISTS _cache_kernel_attachments;

-- name: cache_make_kernel_attachments
DROP VIEW IF EXISTS _cache_kernel_attachments;
CREATE TABLE _cache_kernel_attachments AS SELECT * FROM _kernel_attachments_derived ORDER BY timeline_id, seq, graph_timeline_id;

-- name: cache_empty_kernel_attachments
DELETE FROM _cache_kernel_attachments;

-- name: cache_refill_kernel_attachments
DELETE FROM _cache_kernel_attachments;
INSERT INTO _cache_kernel_attachments BY NAME SELECT * FROM _kernel_attachments_derived ORDER BY timeline_id, seq, graph_timeline_id;
