-- JAX device memory profiles (ingest/jax_memory_profile.py): the live device buffers at
-- one instant, by the Python stack that made them. A profile is a timeline of one step
-- (node memory_profile at step 0) whose buffers are all live at it, so memory_curve and
-- peak_memory hold the bytes they occupy (on a GPU, what memory_stats()['bytes_in_use']
-- said at the dump; see memory_profile_buffers.bytes). Each buffer row stands for `count` buffers of one size made at one stack
-- on one device (the profile's sample); its stack is interned in frames/stacks as an
-- allocator snapshot's (allocator_stacks gives its frames and site).

-- memory_profile_buffers: every buffer sample of every memory profile, largest first
-- within a timeline.
--   timeline_id, source_id, buffer (sample_<i>: i its index among the file's samples),
--   bytes (what its buffers hold on the device: count x size, on a GPU/TPU each rounded up
--   to 256 B, the chunks of XLA's BFC allocator, which bytes_in_use counts), profile_bytes
--   (the profile's own figure: count x size), count (buffers it stands for), size (bytes
--   of each, as the profile says), device, dtype and shape (where the profile's labels give them, else NULL),
--   stack_id (frames in stacks/frames, same source_id), site (the first frame outside
--   jax, torch, triton and Python's library: see _is_internal_frame; '<no frames>' when
--   the profile has none), stack (all frames as 'file:line:name', innermost first),
--   attrs (the sample's other labels, its byte offset in the profile).
CREATE OR REPLACE VIEW memory_profile_buffers AS
SELECT b.timeline_id, t.source_id, b.buffer, b.bytes,
       TRY_CAST(json_extract(b.attrs, '$.profile_bytes') AS BIGINT) AS profile_bytes,
       TRY_CAST(json_extract(b.attrs, '$.count') AS BIGINT) AS count,
       TRY_CAST(json_extract(b.attrs, '$.size') AS BIGINT) AS size,
       b.device, b.dtype, b.shape,
       TRY_CAST(json_extract(b.attrs, '$.stack_id') AS INTEGER) AS stack_id,
       COALESCE(s.site, '<no frames>') AS site, COALESCE(s.stack, []) AS stack, b.attrs
FROM buffers b JOIN timeline_records t ON t.timeline_id = b.timeline_id
LEFT JOIN allocator_stacks s ON s.source_id = t.source_id
     AND s.stack_id = TRY_CAST(json_extract(b.attrs, '$.stack_id') AS INTEGER)
WHERE t.format = 'jax_memory_profile';

-- memory_profile_sites: per memory profile and site, what is live there at the dump.
--   timeline_id, site, buffers (Σ count), samples (rows of memory_profile_buffers), bytes
--   (Σ bytes: the sites of a timeline sum to its peak_memory.peak_bytes).
CREATE OR REPLACE VIEW memory_profile_sites AS
SELECT timeline_id, site, CAST(sum(count) AS BIGINT) AS buffers, count(*) AS samples,
       CAST(sum(bytes) AS BIGINT) AS bytes
FROM memory_profile_buffers GROUP BY timeline_id, site;
