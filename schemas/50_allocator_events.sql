-- CUDA caching-allocator snapshots (ingest/cuda_snapshot.py): measured memory timelines.

-- frames: every distinct stack frame of a source (interned at ingest), numbered from 1.
--   filename, line, name as torch symbolized them; attrs: FX fields (fx_node_op, ...)
--   when the snapshot was augmented with them.
CREATE TABLE IF NOT EXISTS frames (
    source_id INTEGER NOT NULL,
    frame_id  INTEGER NOT NULL,
    filename  VARCHAR,
    line      BIGINT,
    name      VARCHAR,
    attrs     JSON
);

-- stacks: every distinct stack of a source: its frame ids, innermost first (as torch
-- lists them). events.stack_id refers to (source_id, stack_id).
CREATE TABLE IF NOT EXISTS stacks (
    source_id INTEGER NOT NULL,
    stack_id  INTEGER NOT NULL,
    frame_ids INTEGER[]
);

-- Caches (store/caches.py): exactly what _allocator_curve_derived and
-- _allocator_blocks_derived compute, per timeline, refreshed inside each ingest.
CREATE TABLE IF NOT EXISTS _cache_allocator_curve (
    timeline_id INTEGER, event_index BIGINT, time_us BIGINT,
    allocated_bytes BIGINT, reserved_bytes BIGINT, active_blocks BIGINT, block_bytes BIGINT
);
CREATE TABLE IF NOT EXISTS _cache_allocator_blocks (
    timeline_id INTEGER, source_id INTEGER, address BIGINT, size BIGINT,
    requested_size BIGINT, stream BIGINT, alloc_index BIGINT, free_requested_index BIGINT,
    free_index BIGINT, alloc_time_us BIGINT, free_time_us BIGINT, stack_id INTEGER,
    stack_from VARCHAR, origin VARCHAR
);

-- How a snapshot timeline reads (docs/allocator.md):
--   event_index: position of an entry in its device's trace (0-based, oldest first);
--     -1 stands for the state when the window begins, before its first entry.
--   allocated bytes: Σ requested sizes of the blocks allocated and not yet
--     free_completed (alloc adds the entry's size, free_completed removes it);
--   block bytes: the same in whole blocks (block_bytes: the allocator's rounding and
--     unsplit remainders), what torch.cuda.max_memory_allocated() counts;
--   reserved bytes: Σ sizes of the segments (segment_alloc/map add, segment_free/unmap
--     remove);
--   the start of the window = the end state (active blocks, segments) minus the
--     trace's net change: blocks made before the window are counted from the start.

-- allocator_events: every trace entry of every snapshot timeline.
--   action: alloc, free_requested, free_completed, segment_alloc, segment_free,
--     segment_map, segment_unmap, oom, snapshot (or another the dump names);
--   size: the entry's size (requested bytes; for segments the segment; for oom the
--     failed request); block_bytes: the whole block (see above);
--   alloc_index: on a free, the event_index of the alloc it frees (NULL: made before
--     the window); on a segment_free/unmap, of the segment_alloc/map;
--   device_free: on oom, what CUDA said was free; compile_context, user_metadata as
--     recorded; stack_id: frames in stacks/frames (same source_id); attrs: the rest.
CREATE OR REPLACE VIEW allocator_events AS
SELECT e.timeline_id, e.source_id, e.step AS event_index, e.op AS action, e.address,
       e.bytes AS size, e.block_bytes, e.stream, e.ts_ns // 1000 AS time_us, e.stack_id,
       e.correlation AS alloc_index,
       TRY_CAST(json_extract(e.attrs, '$.device_free') AS BIGINT) AS device_free,
       json_extract_string(e.attrs, '$.compile_context') AS compile_context,
       json_extract_string(e.attrs, '$.user_metadata') AS user_metadata, e.attrs
FROM events_allocator_action e;

-- allocator_segments_end, allocator_blocks_end: the allocator's state when the snapshot
-- was taken. state: active_allocated | active_pending_free | inactive;
-- requested_size: what was asked for (size: the whole block); alloc_index: the trace
-- entry that made it (NULL: before the window); pool: segment_type (small | large).
CREATE OR REPLACE VIEW allocator_segments_end AS
SELECT timeline_id, source_id, address, bytes AS size, stream, stack_id,
       correlation AS alloc_index,
       json_extract_string(attrs, '$.segment_type') AS pool,
       attrs->'$.segment_pool_id' AS segment_pool_id,
       TRY_CAST(json_extract(attrs, '$.allocated_size') AS BIGINT) AS allocated_size,
       TRY_CAST(json_extract(attrs, '$.is_expandable') AS BOOLEAN) AS is_expandable, attrs
FROM events_allocator_segment;

CREATE OR REPLACE VIEW allocator_blocks_end AS
SELECT timeline_id, source_id, address, block_bytes AS size, bytes AS requested_size,
       op AS state, stream, stack_id, correlation AS alloc_index, attrs
FROM events_allocator_block;

-- _allocator_delta(op, n), _reserved_delta(op, n): how one trace entry changes the allocated
-- bytes (n: its size; 1 for the active blocks; block_bytes for whole blocks) and the
-- reserved bytes.
CREATE OR REPLACE MACRO _allocator_delta(op, nbytes) AS
    CASE op WHEN 'alloc' THEN nbytes WHEN 'free_completed' THEN -nbytes ELSE 0 END;
CREATE OR REPLACE MACRO _reserved_delta(op, nbytes) AS
    CASE WHEN op IN ('segment_alloc', 'segment_map') THEN nbytes
         WHEN op IN ('segment_free', 'segment_unmap') THEN -nbytes ELSE 0 END;
