-- tlview tables. The events table is the truth and is append-only: rows are
-- inserted by an ingest (one transaction per input file) and never updated or
-- deleted. Every other object is a view over it.

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
--       allocator_action | allocator_segment | allocator_block | allocator_annotation
-- Columns not used by a kind are NULL; anything else the dump said is in attrs.
CREATE TABLE IF NOT EXISTS events (
    source_id   INTEGER NOT NULL,
    timeline_id INTEGER NOT NULL,
    seq         BIGINT NOT NULL,     -- order of emission within the source
    kind        VARCHAR NOT NULL,
    step        BIGINT,              -- schedule position; for buffer_freed the LAST live step
    node        VARCHAR,
    buffer      VARCHAR,
    target      VARCHAR,             -- buffer_aliased: the buffer whose storage is shared
    relation    VARCHAR,             -- buffer_aliased: mutation | alias | reuse | view
    reason      VARCHAR,             -- buffer_freed: why here (last use, del, live range end)
    node_class  VARCHAR,
    ir_type     VARCHAR,
    kernel      VARCHAR,
    device      VARCHAR,
    reads       VARCHAR[],
    writes      VARCHAR[],
    bytes       BIGINT,              -- NULL when unknown (symbolic), never 0 for unknown
    layout      VARCHAR,
    dtype       VARCHAR,
    shape       VARCHAR,
    stride      VARCHAR,
    size_expr   VARCHAR,             -- symbolic byte expression when bytes is NULL
    is_input    BOOLEAN,
    allocation  BIGINT,              -- XLA allocation index
    "offset"    BIGINT,              -- byte offset inside the allocation
    op          VARCHAR,             -- collective op (all_gather_into_tensor_out, ...)
    buffers     VARCHAR[],           -- collective: the buffers it touches
    collective  VARCHAR,             -- collective_waited: the node that issued it
    name        VARCHAR,             -- kernel_measured: kernel or op name
    category    VARCHAR,             -- kernel_measured: kernel, gpu_memcpy, cpu_op, ...;
                                     -- compile_event: chromium, metrics, estimate, ...
    ts_ns       BIGINT,
    dur_ns      BIGINT,
    stream      BIGINT,
    correlation BIGINT,
    line        BIGINT,              -- line of the input file the event came from
    -- zstd: the raw text of each event (a Kineto event's JSON, ~300 bytes) compresses
    -- 2.7x smaller than DuckDB's default string compression and is written ~20% faster.
    attrs       JSON USING COMPRESSION zstd,
    -- Schema v3 (CUDA allocator snapshots, schemas/50_allocator.sql), at the end:
    address     BIGINT,              -- allocator: device address of the block or segment
    stack_id    INTEGER,             -- allocator: interned frames (stacks/frames, same source)
    block_bytes BIGINT               -- allocator: the whole block handed out (bytes = requested)
);
-- v2 -> v3: the same columns added at the end of an existing events table.
ALTER TABLE events ADD COLUMN IF NOT EXISTS address BIGINT;
ALTER TABLE events ADD COLUMN IF NOT EXISTS stack_id INTEGER;
ALTER TABLE events ADD COLUMN IF NOT EXISTS block_bytes BIGINT;

-- Caches: derived from the events table by the views in 10_core_views.sql, refreshed for
-- the timelines an ingest touched, inside its transaction, and rebuilt whole by
-- `tlview migrate`. They hold nothing the events do not; they make the views instant
-- on timelines of millions of steps. Read them through the views, not directly.
CREATE TABLE IF NOT EXISTS _cache_buffers (
    timeline_id INTEGER, buffer VARCHAR, bytes BIGINT, alloc_step BIGINT, last_step BIGINT,
    dtype VARCHAR, shape VARCHAR, stride VARCHAR, layout VARCHAR, device VARCHAR,
    producer VARCHAR, is_input BOOLEAN, size_expr VARCHAR, allocation BIGINT, "offset" BIGINT,
    free_reason VARCHAR, line BIGINT, attrs JSON
);
CREATE TABLE IF NOT EXISTS _cache_memory_curve (
    timeline_id INTEGER, step BIGINT, node VARCHAR, live_bytes BIGINT, alloc_bytes BIGINT,
    freed_bytes BIGINT, unknown_live BIGINT
);
CREATE TABLE IF NOT EXISTS _cache_peak (
    timeline_id INTEGER, peak_step BIGINT, peak_bytes BIGINT, node VARCHAR
);
