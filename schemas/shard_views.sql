-- The large tables of a shard set as views over its Parquet files (shard_set.sql says
-- how ids are given). Views are bound when queried, so one copy of these (kept with
-- the empty database template) serves every shard set: getvariable('tlview_shards')
-- names the set.

CREATE OR REPLACE VIEW events AS
SELECT b.source_id, CAST(e.timeline_id + b.base AS INTEGER) AS timeline_id, e.seq, e.kind,
       e.step, e.node, e.buffer, e.target, e.relation, e.reason, e.node_class, e.ir_type,
       e.kernel, e.device, e.reads, e.writes, e.bytes, e.layout, e.dtype, e.shape, e.stride,
       e.size_expr, e.is_input, e.allocation, e."offset", e.op, e.buffers, e.collective,
       e.name, e.category, e.ts_ns, e.dur_ns, e.stream, e.correlation, e.line,
       CAST(e.attrs AS JSON) AS attrs, e.address, e.stack_id, e.block_bytes,
       e.process_group, e.pg_desc, e.pg_id, e.seq_id, e.p2p_seq_id, e.op_id, e.is_p2p,
       e.state, e.started_ns, e.completed_ns, e.in_sizes, e.out_sizes, e.in_dtypes,
       e.out_dtypes, e.timeout_ms, e.retired, e.ranks, e.last_enqueued, e.last_started,
       e.last_completed, e.thread
FROM read_parquet(getvariable('tlview_shards') || '/events/*/*.parquet',
                  hive_partitioning = true) e
JOIN _shard_bases b ON b.source_id = e.source_id;

-- events_<kind>: each kind's events in the columns of its table in a database
-- (schemas/00_tables.sql), which the views below read.
CREATE OR REPLACE VIEW events_node_scheduled AS
SELECT source_id, timeline_id, seq, step, node, node_class, ir_type, kernel, device,
       reads, writes, line, attrs
FROM events WHERE kind = 'node_scheduled';

CREATE OR REPLACE VIEW events_buffer_allocated AS
SELECT source_id, timeline_id, seq, step, node, buffer, device, bytes, layout, dtype,
       shape, stride, size_expr, is_input, allocation, "offset", line, attrs
FROM events WHERE kind = 'buffer_allocated';

CREATE OR REPLACE VIEW events_buffer_freed AS
SELECT source_id, timeline_id, seq, step, buffer, reason, attrs
FROM events WHERE kind = 'buffer_freed';

CREATE OR REPLACE VIEW events_buffer_aliased AS
SELECT source_id, timeline_id, seq, step, node, buffer, target, relation, attrs
FROM events WHERE kind = 'buffer_aliased';

CREATE OR REPLACE VIEW events_collective_issued AS
SELECT source_id, timeline_id, seq, step, node, bytes, op, buffers, attrs
FROM events WHERE kind = 'collective_issued';

CREATE OR REPLACE VIEW events_collective_waited AS
SELECT source_id, timeline_id, seq, step, node, collective, attrs
FROM events WHERE kind = 'collective_waited';

CREATE OR REPLACE VIEW events_kernel_measured AS
SELECT source_id, timeline_id, seq, step, node, device, bytes, name, category, ts_ns,
       dur_ns, stream, correlation, attrs
FROM events WHERE kind = 'kernel_measured';

CREATE OR REPLACE VIEW events_compile_event AS
SELECT source_id, timeline_id, seq, step, node, kernel, name, category, ts_ns, dur_ns,
       line, attrs
FROM events WHERE kind = 'compile_event';

CREATE OR REPLACE VIEW events_allocator_action AS
SELECT source_id, timeline_id, seq, step, device, bytes, op, ts_ns, stream, correlation,
       attrs, address, stack_id, block_bytes
FROM events WHERE kind = 'allocator_action';

CREATE OR REPLACE VIEW events_allocator_segment AS
SELECT source_id, timeline_id, seq, device, bytes, stream, correlation, attrs, address,
       stack_id
FROM events WHERE kind = 'allocator_segment';

CREATE OR REPLACE VIEW events_allocator_block AS
SELECT source_id, timeline_id, seq, device, bytes, op, stream, correlation, attrs,
       address, stack_id, block_bytes
FROM events WHERE kind = 'allocator_block';

CREATE OR REPLACE VIEW events_allocator_annotation AS
SELECT source_id, timeline_id, seq, device, name, ts_ns, attrs
FROM events WHERE kind = 'allocator_annotation';

CREATE OR REPLACE VIEW events_collective_recorded AS
SELECT source_id, timeline_id, seq, step, op, ts_ns, dur_ns, attrs, stack_id, process_group,
       pg_desc, pg_id, seq_id, p2p_seq_id, op_id, is_p2p, state, started_ns, completed_ns,
       in_sizes, out_sizes, in_dtypes, out_dtypes, timeout_ms, retired
FROM events WHERE kind = 'collective_recorded';

CREATE OR REPLACE VIEW events_process_group AS
SELECT source_id, timeline_id, seq, attrs, process_group, pg_desc, ranks
FROM events WHERE kind = 'process_group';

CREATE OR REPLACE VIEW events_process_group_status AS
SELECT source_id, timeline_id, seq, attrs, pg_id, last_enqueued, last_started, last_completed
FROM events WHERE kind = 'process_group_status';

CREATE OR REPLACE VIEW events_thread_stack AS
SELECT source_id, timeline_id, seq, step, name, attrs, stack_id, state, thread
FROM events WHERE kind = 'thread_stack';

CREATE OR REPLACE VIEW frames AS
SELECT b.source_id, f.frame_id, f.filename, f.line, f.name, CAST(f.attrs AS JSON) AS attrs
FROM read_parquet(getvariable('tlview_shards') || '/frames/*/*.parquet',
                  hive_partitioning = true) f
JOIN _shard_bases b ON b.source_id = f.source_id;

CREATE OR REPLACE VIEW stacks AS
SELECT b.source_id, s.stack_id, s.frame_ids
FROM read_parquet(getvariable('tlview_shards') || '/stacks/*/*.parquet',
                  hive_partitioning = true) s
JOIN _shard_bases b ON b.source_id = s.source_id;

-- The caches, as the worker that wrote each shard computed them (the same statements
-- as an ingest's, store/caches.py).
CREATE OR REPLACE VIEW _cache_buffers AS
SELECT c.* EXCLUDE (source_id) REPLACE (CAST(c.timeline_id + b.base AS INTEGER) AS timeline_id,
                                       CAST(c.attrs AS JSON) AS attrs)
FROM read_parquet(getvariable('tlview_shards') || '/cache_buffers/*/*.parquet',
                  hive_partitioning = true) c
JOIN _shard_bases b ON b.source_id = c.source_id;

CREATE OR REPLACE VIEW _cache_memory_curve AS
SELECT c.* EXCLUDE (source_id) REPLACE (CAST(c.timeline_id + b.base AS INTEGER) AS timeline_id)
FROM read_parquet(getvariable('tlview_shards') || '/cache_memory_curve/*/*.parquet',
                  hive_partitioning = true) c
JOIN _shard_bases b ON b.source_id = c.source_id;

CREATE OR REPLACE VIEW _cache_peak AS
SELECT c.* EXCLUDE (source_id) REPLACE (CAST(c.timeline_id + b.base AS INTEGER) AS timeline_id)
FROM read_parquet(getvariable('tlview_shards') || '/cache_peak/*/*.parquet',
                  hive_partitioning = true) c
JOIN _shard_bases b ON b.source_id = c.source_id;

CREATE OR REPLACE VIEW _cache_allocator_curve AS
SELECT c.* EXCLUDE (source_id) REPLACE (CAST(c.timeline_id + b.base AS INTEGER) AS timeline_id)
FROM read_parquet(getvariable('tlview_shards') || '/cache_allocator_curve/*/*.parquet',
                  hive_partitioning = true) c
JOIN _shard_bases b ON b.source_id = c.source_id;

CREATE OR REPLACE VIEW _cache_allocator_blocks AS
SELECT CAST(c.timeline_id + b.base AS INTEGER) AS timeline_id, b.source_id,
       c.* EXCLUDE (timeline_id, source_id)
FROM read_parquet(getvariable('tlview_shards') || '/cache_allocator_blocks/*/*.parquet',
                  hive_partitioning = true) c
JOIN _shard_bases b ON b.source_id = c.source_id;

CREATE OR REPLACE VIEW _cache_fr_dump_stats AS
SELECT c.* EXCLUDE (source_id) REPLACE (CAST(c.timeline_id + b.base AS INTEGER) AS timeline_id)
FROM read_parquet(getvariable('tlview_shards') || '/cache_fr_dump_stats/*/*.parquet',
                  hive_partitioning = true) c
JOIN _shard_bases b ON b.source_id = c.source_id;

CREATE OR REPLACE VIEW _cache_fr_calls AS
SELECT c.* EXCLUDE (source_id) REPLACE (CAST(c.timeline_id + b.base AS INTEGER) AS timeline_id)
FROM read_parquet(getvariable('tlview_shards') || '/cache_fr_calls/*/*.parquet',
                  hive_partitioning = true) c
JOIN _shard_bases b ON b.source_id = c.source_id;
