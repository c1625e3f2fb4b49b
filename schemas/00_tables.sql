-- tlview tables. The events (one table per kind, events_<kind>, read together through
-- the view `events`) are the truth and append-only: rows are inserted by an ingest (one
-- transaction per input file) and never updated or deleted. Every other object is a view
-- over them.

-- Key/value facts about the database itself; 'schema_version' is always present.
CREATE TABLE IF NOT EXISTS tlview_meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR
);

-- One row per ingested input file: where every timeline and event came from.
CREATE TABLE IF NOT EXISTS sources (
    source_id    INTEGER PRIMARY KEY,
    path         VARCHAR NOT NULL,   -- as given to `tlview ingest`, made absolute
    size         BIGINT NOT NULL,    -- bytes on disk
    sha256       VARCHAR NOT NULL,   -- of the file's bytes; re-ingest detection
    format       VARCHAR NOT NULL,   -- inductor_ir, xla_buffer_assignment, ...
    tool_version VARCHAR,            -- where the dump states it
    ingested_at  TIMESTAMP NOT NULL,
    attrs        JSON                -- ingest summary: counts, warnings, unknown lines
);

-- One row per timeline: one schedule of one program on one device.
CREATE TABLE IF NOT EXISTS timeline_records (
    timeline_id INTEGER PRIMARY KEY,
    source_id   INTEGER NOT NULL,
    key         VARCHAR NOT NULL,    -- the ingester's local name for it
    name        VARCHAR NOT NULL,
    format      VARCHAR NOT NULL,
    device      VARCHAR,
    attrs       JSON
);

-- Facts learned about a timeline after it began (step count, device, warnings).
CREATE TABLE IF NOT EXISTS timeline_notes (
    timeline_id INTEGER NOT NULL,
    source_id   INTEGER NOT NULL,
    attrs       JSON
);

-- The events. One row per record an ingester emitted, in emission order (seq).
-- kind: node_scheduled | buffer_allocated | buffer_freed | buffer_aliased |
--       collective_issued | collective_waited | kernel_measured | compile_event |
--       allocator_action | allocator_segment | allocator_block | allocator_annotation |
--       collective_recorded | process_group | process_group_status | thread_stack
-- Each kind is kept in a table of its own, events_<kind>, holding only the columns that
-- kind has (its record's fields in ingest/records.py); `events` below is their union,
-- with every column. Why: DuckDB compresses every column of every row it appends, NULL
-- or not, so one wide table made each event pay for ~25 columns it never uses (an
-- allocator snapshot's entries appended several times slower: docs/benchmarks.md).
-- Anything else the dump said is in attrs. zstd for attrs: the raw text of each event
-- (a Kineto event's JSON, ~300 bytes) compresses smaller than DuckDB's default string
-- compression and is written faster (docs/benchmarks.md).
CREATE TABLE IF NOT EXISTS events_node_scheduled (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, node VARCHAR, node_class VARCHAR, ir_type VARCHAR, kernel VARCHAR,
    device VARCHAR, reads VARCHAR[], writes VARCHAR[], line BIGINT,
    attrs JSON USING COMPRESSION zstd
);
CREATE TABLE IF NOT EXISTS events_buffer_allocated (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, node VARCHAR, buffer VARCHAR, device VARCHAR, bytes BIGINT,
    layout VARCHAR, dtype VARCHAR, shape VARCHAR, stride VARCHAR, size_expr VARCHAR,
    is_input BOOLEAN, allocation BIGINT, "offset" BIGINT, line BIGINT,
    attrs JSON USING COMPRESSION zstd
);
CREATE TABLE IF NOT EXISTS events_buffer_freed (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, buffer VARCHAR, reason VARCHAR,
    attrs JSON USING COMPRESSION zstd
);
CREATE TABLE IF NOT EXISTS events_buffer_aliased (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, node VARCHAR, buffer VARCHAR, target VARCHAR, relation VARCHAR,
    attrs JSON USING COMPRESSION zstd
);
CREATE TABLE IF NOT EXISTS events_collective_issued (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, node VARCHAR, bytes BIGINT, op VARCHAR, buffers VARCHAR[],
    attrs JSON USING COMPRESSION zstd
);
CREATE TABLE IF NOT EXISTS events_collective_waited (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, node VARCHAR, collective VARCHAR,
    attrs JSON USING COMPRESSION zstd
);
CREATE TABLE IF NOT EXISTS events_kernel_measured (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, node VARCHAR, device VARCHAR, bytes BIGINT, name VARCHAR,
    category VARCHAR, ts_ns BIGINT, dur_ns BIGINT, stream BIGINT, correlation BIGINT,
    attrs JSON USING COMPRESSION zstd
);
CREATE TABLE IF NOT EXISTS events_compile_event (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, node VARCHAR, kernel VARCHAR, name VARCHAR, category VARCHAR,
    ts_ns BIGINT, dur_ns BIGINT, line BIGINT,
    attrs JSON USING COMPRESSION zstd
);
CREATE TABLE IF NOT EXISTS events_allocator_action (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, device VARCHAR, bytes BIGINT, op VARCHAR, ts_ns BIGINT, stream BIGINT,
    correlation BIGINT, attrs JSON USING COMPRESSION zstd, address BIGINT,
    stack_id INTEGER, block_bytes BIGINT
);
CREATE TABLE IF NOT EXISTS events_allocator_segment (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    device VARCHAR, bytes BIGINT, stream BIGINT, correlation BIGINT,
    attrs JSON USING COMPRESSION zstd, address BIGINT, stack_id INTEGER
);
CREATE TABLE IF NOT EXISTS events_allocator_block (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    device VARCHAR, bytes BIGINT, op VARCHAR, stream BIGINT, correlation BIGINT,
    attrs JSON USING COMPRESSION zstd, address BIGINT, stack_id INTEGER, block_bytes BIGINT
);
CREATE TABLE IF NOT EXISTS events_allocator_annotation (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    device VARCHAR, name VARCHAR, ts_ns BIGINT,
    attrs JSON USING COMPRESSION zstd
);
-- Flight Recorder dumps (torch.distributed's trace of each rank's collectives) and Python
-- stack dumps (faulthandler, py-spy): their views are in 55_flight_recorder.sql.
CREATE TABLE IF NOT EXISTS events_collective_recorded (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, op VARCHAR, ts_ns BIGINT, dur_ns BIGINT, attrs JSON USING COMPRESSION zstd,
    stack_id INTEGER, process_group VARCHAR, pg_desc VARCHAR, pg_id BIGINT, seq_id BIGINT,
    p2p_seq_id BIGINT, op_id BIGINT, is_p2p BOOLEAN, state VARCHAR, started_ns BIGINT,
    completed_ns BIGINT, in_sizes VARCHAR, out_sizes VARCHAR, in_dtypes VARCHAR,
    out_dtypes VARCHAR, timeout_ms BIGINT, retired BOOLEAN
);
CREATE TABLE IF NOT EXISTS events_process_group (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    attrs JSON USING COMPRESSION zstd, process_group VARCHAR, pg_desc VARCHAR,
    ranks BIGINT[]
);
CREATE TABLE IF NOT EXISTS events_process_group_status (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    attrs JSON USING COMPRESSION zstd, pg_id BIGINT, last_enqueued BIGINT,
    last_started BIGINT, last_completed BIGINT
);
CREATE TABLE IF NOT EXISTS events_thread_stack (
    source_id INTEGER NOT NULL, timeline_id INTEGER NOT NULL, seq BIGINT NOT NULL,
    step BIGINT, name VARCHAR, attrs JSON USING COMPRESSION zstd, stack_id INTEGER,
    state VARCHAR, thread VARCHAR
);

-- events: every event with every column (NULL where its kind has none), as one table
-- read before schema v4. The first branch only fixes the columns' order and types.
CREATE OR REPLACE VIEW events AS
SELECT NULL::INTEGER AS source_id, NULL::INTEGER AS timeline_id, NULL::BIGINT AS seq,
       NULL::VARCHAR AS kind,
       NULL::BIGINT AS step,          -- schedule position; for buffer_freed the LAST live step
       NULL::VARCHAR AS node, NULL::VARCHAR AS buffer,
       NULL::VARCHAR AS target,       -- buffer_aliased: the buffer whose storage is shared
       NULL::VARCHAR AS relation,     -- buffer_aliased: mutation | alias | reuse | view
       NULL::VARCHAR AS reason,       -- buffer_freed: why here (last use, del, live range end)
       NULL::VARCHAR AS node_class, NULL::VARCHAR AS ir_type, NULL::VARCHAR AS kernel,
       NULL::VARCHAR AS device, NULL::VARCHAR[] AS reads, NULL::VARCHAR[] AS writes,
       NULL::BIGINT AS bytes,         -- NULL when unknown (symbolic), never 0 for unknown
       NULL::VARCHAR AS layout, NULL::VARCHAR AS dtype, NULL::VARCHAR AS shape,
       NULL::VARCHAR AS stride,
       NULL::VARCHAR AS size_expr,    -- symbolic byte expression when bytes is NULL
       NULL::BOOLEAN AS is_input,
       NULL::BIGINT AS allocation,    -- XLA allocation index
       NULL::BIGINT AS "offset",      -- byte offset inside the allocation
       NULL::VARCHAR AS op,           -- collective op; allocator action or block state
       NULL::VARCHAR[] AS buffers,    -- collective: the buffers it touches
       NULL::VARCHAR AS collective,   -- collective_waited: the node that issued it
       NULL::VARCHAR AS name,         -- kernel_measured: kernel or op name
       NULL::VARCHAR AS category,     -- kernel_measured: kernel, gpu_memcpy, cpu_op, ...;
                                      -- compile_event: chromium, metrics, estimate, ...
       NULL::BIGINT AS ts_ns, NULL::BIGINT AS dur_ns, NULL::BIGINT AS stream,
       NULL::BIGINT AS correlation,
       NULL::BIGINT AS line,          -- line of the input file the event came from
       NULL::JSON AS attrs,
       NULL::BIGINT AS address,       -- allocator: device address of the block or segment
       NULL::INTEGER AS stack_id,     -- allocator: interned frames (stacks/frames, same source)
       NULL::BIGINT AS block_bytes,   -- allocator: the whole block handed out (bytes = requested)
       -- Flight Recorder (collective_recorded, process_group, process_group_status) and
       -- stack dumps (thread_stack): ingest/records.py says what each holds
       NULL::VARCHAR AS process_group, NULL::VARCHAR AS pg_desc, NULL::BIGINT AS pg_id,
       NULL::BIGINT AS seq_id, NULL::BIGINT AS p2p_seq_id, NULL::BIGINT AS op_id,
       NULL::BOOLEAN AS is_p2p, NULL::VARCHAR AS state, NULL::BIGINT AS started_ns,
       NULL::BIGINT AS completed_ns, NULL::VARCHAR AS in_sizes, NULL::VARCHAR AS out_sizes,
       NULL::VARCHAR AS in_dtypes, NULL::VARCHAR AS out_dtypes, NULL::BIGINT AS timeout_ms,
       NULL::BOOLEAN AS retired, NULL::BIGINT[] AS ranks, NULL::BIGINT AS last_enqueued,
       NULL::BIGINT AS last_started, NULL::BIGINT AS last_completed, NULL::VARCHAR AS thread
WHERE false
UNION ALL BY NAME SELECT 'node_scheduled' AS kind, * FROM events_node_scheduled
UNION ALL BY NAME SELECT 'buffer_allocated' AS kind, * FROM events_buffer_allocated
UNION ALL BY NAME SELECT 'buffer_freed' AS kind, * FROM events_buffer_freed
UNION ALL BY NAME SELECT 'buffer_aliased' AS kind, * FROM events_buffer_aliased
UNION ALL BY NAME SELECT 'collective_issued' AS kind, * FROM events_collective_issued
UNION ALL BY NAME SELECT 'collective_waited' AS kind, * FROM events_collective_waited
UNION ALL BY NAME SELECT 'kernel_measured' AS kind, * FROM events_kernel_measured
UNION ALL BY NAME SELECT 'compile_event' AS kind, * FROM events_compile_event
UNION ALL BY NAME SELECT 'allocator_action' AS kind, * FROM events_allocator_action
UNION ALL BY NAME SELECT 'allocator_segment' AS kind, * FROM events_allocator_segment
UNION ALL BY NAME SELECT 'allocator_block' AS kind, * FROM events_allocator_block
UNION ALL BY NAME SELECT 'allocator_annotation' AS kind, * FROM events_allocator_annotation
UNION ALL BY NAME SELECT 'collective_recorded' AS kind, * FROM events_collective_recorded
UNION ALL BY NAME SELECT 'process_group' AS kind, * FROM events_process_group
UNION ALL BY NAME SELECT 'process_group_status' AS kind, * FROM events_process_group_status
UNION ALL BY NAME SELECT 'thread_stack' AS kind, * FROM events_thread_stack;

-- Caches: derived from the events table by the views in 10_core_views.sql, refreshed for
-- the timelines an ingest touched, inside its transaction, and rebuilt whole by
-- `tlview migrate`. They hold nothing the events do not; they make the views instant
-- on timelines of millions of steps. Read them through the views, not directly.
CREATE TABLE IF NOT EXISTS _cache_buffers (
    timeline_id INTEGER, buffer VARCHAR, bytes BIGINT, alloc_step BIGINT, last_step BIGINT,
    dtype VARCHAR, shape VARCHAR, stride VARCHAR, layout VARCHAR, device VARCHAR,
    producer VARCHAR, is_input BOOLEAN, size_expr VARCHAR, allocation BIGINT, "offset" BIGINT,
    free_reason VARCHAR, line BIGINT,
    -- zstd, as the events' attrs: written cheaper than the default (docs/benchmarks.md)
    attrs JSON USING COMPRESSION zstd
);
CREATE TABLE IF NOT EXISTS _cache_memory_curve (
    timeline_id INTEGER, step BIGINT, node VARCHAR, live_bytes BIGINT, alloc_bytes BIGINT,
    freed_bytes BIGINT, unknown_live BIGINT
);
CREATE TABLE IF NOT EXISTS _cache_peak (
    timeline_id INTEGER, peak_step BIGINT, peak_bytes BIGINT, node VARCHAR
);
