-- Moving a database from schema v2/v3 (one wide `events` table) to v4 (events_<kind>
-- tables and the view `events`): store/schema.py renames the old table, creates the new
-- schema, then runs these in the same transaction.

-- name: migrate_events_rename
ALTER TABLE events RENAME TO _events_v3;

-- name: migrate_events_split
-- v2 databases lack the allocator columns; every row goes to its kind's table, in order.
ALTER TABLE _events_v3 ADD COLUMN IF NOT EXISTS address BIGINT;
ALTER TABLE _events_v3 ADD COLUMN IF NOT EXISTS stack_id INTEGER;
ALTER TABLE _events_v3 ADD COLUMN IF NOT EXISTS block_bytes BIGINT;
INSERT INTO events_node_scheduled
SELECT source_id, timeline_id, seq, step, node, node_class, ir_type, kernel, device,
       reads, writes, line, attrs
FROM _events_v3 WHERE kind = 'node_scheduled' ORDER BY source_id, seq;
INSERT INTO events_buffer_allocated
SELECT source_id, timeline_id, seq, step, node, buffer, device, bytes, layout, dtype,
       shape, stride, size_expr, is_input, allocation, "offset", line, attrs
FROM _events_v3 WHERE kind = 'buffer_allocated' ORDER BY source_id, seq;
INSERT INTO events_buffer_freed
SELECT source_id, timeline_id, seq, step, buffer, reason, attrs
FROM _events_v3 WHERE kind = 'buffer_freed' ORDER BY source_id, seq;
INSERT INTO events_buffer_aliased
SELECT source_id, timeline_id, seq, step, node, buffer, target, relation, attrs
FROM _events_v3 WHERE kind = 'buffer_aliased' ORDER BY source_id, seq;
INSERT INTO events_collective_issued
SELECT source_id, timeline_id, seq, step, node, bytes, op, buffers, attrs
FROM _events_v3 WHERE kind = 'collective_issued' ORDER BY source_id, seq;
INSERT INTO events_collective_waited
SELECT source_id, timeline_id, seq, step, node, collective, attrs
FROM _events_v3 WHERE kind = 'collective_waited' ORDER BY source_id, seq;
INSERT INTO events_kernel_measured
SELECT source_id, timeline_id, seq, step, node, device, bytes, name, category, ts_ns,
       dur_ns, stream, correlation, attrs
FROM _events_v3 WHERE kind = 'kernel_measured' ORDER BY source_id, seq;
INSERT INTO events_compile_event
SELECT source_id, timeline_id, seq, step, node, kernel, name, category, ts_ns, dur_ns,
       line, attrs
FROM _events_v3 WHERE kind = 'compile_event' ORDER BY source_id, seq;
INSERT INTO events_allocator_action
SELECT source_id, timeline_id, seq, step, device, bytes, op, ts_ns, stream, correlation,
       attrs, address, stack_id, block_bytes
FROM _events_v3 WHERE kind = 'allocator_action' ORDER BY source_id, seq;
INSERT INTO events_allocator_segment
SELECT source_id, timeline_id, seq, device, bytes, stream, correlation, attrs, address,
       stack_id
FROM _events_v3 WHERE kind = 'allocator_segment' ORDER BY source_id, seq;
INSERT INTO events_allocator_block
SELECT source_id, timeline_id, seq, device, bytes, op, stream, correlation, attrs,
       address, stack_id, block_bytes
FROM _events_v3 WHERE kind = 'allocator_block' ORDER BY source_id, seq;
INSERT INTO events_allocator_annotation
SELECT source_id, timeline_id, seq, device, name, ts_ns, attrs
FROM _events_v3 WHERE kind = 'allocator_annotation' ORDER BY source_id, seq;

-- name: migrate_events_left
-- Rows of a kind this schema has no table for (none in any database tlview wrote).
SELECT kind, count(*) FROM _events_v3 WHERE kind NOT IN (
    'node_scheduled', 'buffer_allocated', 'buffer_freed', 'buffer_aliased',
    'collective_issued', 'collective_waited', 'kernel_measured', 'compile_event',
    'allocator_action', 'allocator_segment', 'allocator_block', 'allocator_annotation')
GROUP BY kind ORDER BY kind;

-- name: migrate_events_drop
DROP TABLE _events_v3;

-- name: migrate_rank_cache_tables
-- The ranks' cache tables (store/caches.py RANK_CACHES), dropped before the views are made
-- again: the views then read their derivations as they are now, and the caches are made
-- again from them (a table of an older derivation's columns would not match the views).
-- A cache still a view of its derivation is not listed (DROP TABLE would fail on it).
-- The Flight Recorder dumps' caches (schemas/55_flight_recorder.sql, CACHES) likewise: made
-- again empty by the schema, refilled by the rebuild of every cache that follows. The
-- attribution's caches (store/caches.py ATTACHMENT_CACHES) as the ranks'.
SELECT table_name FROM duckdb_tables()
WHERE schema_name = 'main'
  AND table_name IN ('_cache_rank_traces', '_cache_pg_ranks', '_cache_arrivals',
                     '_cache_fr_dump_stats', '_cache_fr_calls',
                     '_cache_output_nodes', '_cache_call_candidates', '_cache_call_graphs',
                     '_cache_extern_ops', '_cache_triton_attachments',
                     '_cache_kernel_attachments');
