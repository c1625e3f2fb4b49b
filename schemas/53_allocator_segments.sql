-- Segments of allocator snapshots: each segment's life, fragmentation at the peak and
-- at each OOM, and the OOMs.

-- allocator_segment_lives: every segment the window saw, with its life.
--   alloc_index / free_index: the segment_alloc (map) and segment_free (unmap) entries
--   (NULL: before the window / still reserved at the end); pool: small | large, the end
--   state's segment_type where the segment is still there, else small for a 2 MiB
--   segment (kSmallBuffer: the small pool's only size) and large otherwise.
CREATE OR REPLACE VIEW allocator_segment_lives AS
WITH lives AS (
    SELECT a.timeline_id, a.source_id, a.address, a.size, a.stream, a.event_index AS alloc_index,
           f.event_index AS free_index
    FROM allocator_events a
    LEFT JOIN allocator_events f ON f.timeline_id = a.timeline_id
         AND f.alloc_index = a.event_index AND f.action IN ('segment_free', 'segment_unmap')
    WHERE a.action IN ('segment_alloc', 'segment_map')
    UNION ALL
    SELECT timeline_id, source_id, address, size, stream, NULL, event_index
    FROM allocator_events
    WHERE action IN ('segment_free', 'segment_unmap') AND alloc_index IS NULL
    UNION ALL
    SELECT timeline_id, source_id, address, size, stream, NULL, NULL
    FROM allocator_segments_end WHERE alloc_index IS NULL
)
SELECT l.*, COALESCE(e.pool, CASE WHEN l.size = 2097152 THEN 'small' ELSE 'large' END) AS pool
FROM lives l LEFT JOIN allocator_segments_end e
  ON e.timeline_id = l.timeline_id AND e.address = l.address
 AND e.alloc_index IS NOT DISTINCT FROM l.alloc_index AND l.free_index IS NULL;

-- _allocator_points: the moments fragmentation describes: the peak, and each OOM.
CREATE OR REPLACE VIEW _allocator_points AS
SELECT timeline_id, 'peak' AS moment, event_index, CAST(NULL AS BIGINT) AS requested_bytes,
       CAST(NULL AS BIGINT) AS request_stream
FROM allocator_peak
UNION ALL
SELECT timeline_id, 'oom', event_index, size, stream FROM allocator_events WHERE action = 'oom';

-- fragmentation: at the peak and at each OOM (moment: 'peak' | 'oom'), per stream and pool
-- (small | large):
--   reserved_bytes (its segments); allocated_bytes (requested bytes of its live blocks, as
--   allocator_curve counts them); block_bytes (the same blocks whole, as torch's
--   memory_allocated() and its OOM message's "allocated by PyTorch" count them: a block
--   is at least its request rounded up to 512 B, and a cached block reused for a smaller
--   request is not split when 1 MiB or less would remain);
--   reserved_unallocated_bytes = reserved_bytes - block_bytes: torch's figure, what its
--   OOM message calls "reserved by PyTorch but unallocated" (the rows of an OOM sum to
--   it); reserved_minus_requested = reserved_bytes - allocated_bytes: the same plus the
--   blocks' internal waste (= the free ranges' bytes + internal_waste);
--   largest_free_block (the largest free range of one of its segments: between live
--   blocks, or before the first / after the last), free_ranges (how many), internal_waste
--   = block_bytes - allocated_bytes;
--   for an OOM: requested_bytes (the failed request as the OOM's trace entry holds it:
--   already rounded by the allocator, see ooms), request_bytes_rounded (512-byte
--   multiples: the same figure unless the allocator was set to round otherwise), and on
--   the row of the request's stream and pool (small if the rounded size is <= 1 MiB)
--   request_fits: whether it would have fit in that largest free block. blocks_exact:
--   false when some block sizes of the timeline are estimates (timeline_notes
--   attrs.block_bytes_estimated), so free ranges are bounds.
CREATE OR REPLACE VIEW fragmentation AS
WITH segs AS (
    SELECT p.timeline_id, p.moment, p.event_index, s.address AS seg, s.size AS seg_size,
           s.stream, s.pool
    FROM _allocator_points p JOIN allocator_segment_lives s ON s.timeline_id = p.timeline_id
     AND COALESCE(s.alloc_index, -1) <= p.event_index
     AND (s.free_index IS NULL OR s.free_index > p.event_index)
), blks AS (
    SELECT p.timeline_id, p.moment, p.event_index, b.address, b.size, b.requested_size
    FROM _allocator_points p JOIN allocator_blocks b ON b.timeline_id = p.timeline_id
     AND COALESCE(b.alloc_index, -1) <= p.event_index
     AND (b.free_index IS NULL OR b.free_index > p.event_index)
), placed AS (
    SELECT s.*, b.address, b.size, b.requested_size
    FROM segs s LEFT JOIN blks b
      ON b.timeline_id = s.timeline_id AND b.moment = s.moment AND b.event_index = s.event_index
     AND b.address >= s.seg AND b.address < s.seg + s.seg_size
), gaps AS (
    SELECT *,
           address - COALESCE(lag(address + size) OVER w, seg) AS gap_before,
           CASE WHEN lead(address) OVER w IS NULL
                THEN seg + seg_size - COALESCE(address + size, seg) END AS gap_after
    FROM placed
    WINDOW w AS (PARTITION BY timeline_id, moment, event_index, seg ORDER BY address)
), per_group AS (
    SELECT timeline_id, moment, event_index, stream, pool,
           COALESCE(sum(requested_size), 0) AS allocated_bytes,
           COALESCE(sum(size), 0) AS block_bytes,
           COALESCE(sum(size - requested_size), 0) AS internal_waste,
           max(greatest(COALESCE(gap_before, 0), COALESCE(gap_after, 0))) AS largest_free_block,
           count(*) FILTER (WHERE gap_before > 0) + count(*) FILTER (WHERE gap_after > 0) AS free_ranges
    FROM gaps GROUP BY ALL
), reserved AS (
    SELECT timeline_id, moment, event_index, stream, pool, sum(seg_size) AS reserved_bytes
    FROM segs GROUP BY ALL
), exact AS (
    SELECT timeline_id,
           bool_and(COALESCE(TRY_CAST(json_extract(attrs, '$.block_bytes_estimated') AS BIGINT), 0) = 0) AS blocks_exact
    FROM timeline_notes GROUP BY timeline_id
)
SELECT g.timeline_id, g.moment, g.event_index, g.stream, g.pool, r.reserved_bytes,
       g.allocated_bytes, g.block_bytes,
       r.reserved_bytes - g.block_bytes AS reserved_unallocated_bytes,
       r.reserved_bytes - g.allocated_bytes AS reserved_minus_requested,
       g.largest_free_block, g.free_ranges, g.internal_waste,
       p.requested_bytes,
       CASE WHEN p.requested_bytes < 512 THEN 512
            ELSE (p.requested_bytes + 511) // 512 * 512 END AS request_bytes_rounded,
       CASE WHEN p.moment = 'oom' AND g.stream IS NOT DISTINCT FROM p.request_stream
             AND g.pool = CASE WHEN p.requested_bytes <= 1048576 THEN 'small' ELSE 'large' END
            THEN g.largest_free_block >= CASE WHEN p.requested_bytes < 512 THEN 512
                                              ELSE (p.requested_bytes + 511) // 512 * 512 END
       END AS request_fits,
       COALESCE(x.blocks_exact, true) AS blocks_exact
FROM per_group g JOIN reserved r USING (timeline_id, moment, event_index, stream, pool)
JOIN _allocator_points p USING (timeline_id, moment, event_index)
LEFT JOIN exact x USING (timeline_id)
ORDER BY g.timeline_id, g.event_index, g.stream, g.pool;

-- ooms: every OOM the allocator recorded.
--   requested_bytes: the failed request, as the OOM's trace entry holds it: the size the
--   allocator looked for a block of, the program's request already rounded (512-byte
--   multiples; PYTORCH_CUDA_ALLOC_CONF's roundup_power2_divisions may round more);
--   segment_bytes: the segment it then asked CUDA for and could not get, by the caching
--   allocator's rule (c10/cuda/CUDACachingAllocator.cpp, get_allocation_size): 2 MiB for
--   a request of 1 MiB or less, 20 MiB below 10 MiB, else the request rounded up to 2 MiB.
--   It is what torch's OOM message says it "Tried to allocate" and what an OOM observer
--   (torch._C._cuda_attach_out_of_memory_observer) gets as alloc: 1,835,008 B more than
--   requested_bytes for a 62.25 MiB request, 64 MiB; equal for a multiple of 2 MiB from
--   10 MiB up. (With expandable_segments the allocator maps pages into one segment
--   instead; the rule does not apply.)
--   device_free: what CUDA reported free;
--   allocated_bytes, reserved_bytes, block_bytes, active_blocks: allocator_curve at it;
--   reserved_unallocated_bytes = reserved_bytes - block_bytes: torch's "reserved by
--   PyTorch but unallocated" (its message counts whole blocks; reserved_bytes -
--   allocated_bytes also counts the blocks' internal waste);
--   largest_free_block / request_fits: from fragmentation (the request's stream and pool);
--   live_by_site: the live blocks grouped by allocation site, largest first:
--   [{site, blocks, bytes}] whose bytes sum to allocated_bytes.
CREATE OR REPLACE VIEW ooms AS
WITH live AS (
    SELECT o.timeline_id, o.event_index, b.site, count(*) AS blocks,
           sum(b.requested_size) AS bytes
    FROM allocator_events o JOIN _allocator_sited_blocks b ON b.timeline_id = o.timeline_id
     AND COALESCE(b.alloc_index, -1) <= o.event_index
     AND (b.free_index IS NULL OR b.free_index > o.event_index)
    WHERE o.action = 'oom' GROUP BY ALL
), by_site AS (
    SELECT timeline_id, event_index,
           list({'site': site, 'blocks': blocks, 'bytes': bytes} ORDER BY bytes DESC, site) AS live_by_site
    FROM live GROUP BY ALL
)
SELECT o.timeline_id, o.event_index, o.time_us, o.size AS requested_bytes, o.device_free,
       o.stream, c.allocated_bytes, c.reserved_bytes, c.block_bytes, c.active_blocks,
       f.largest_free_block, f.request_fits, s.live_by_site,
       CASE WHEN o.size <= 1048576 THEN 2097152 WHEN o.size < 10485760 THEN 20971520
            ELSE (o.size + 2097151) // 2097152 * 2097152 END AS segment_bytes,
       c.reserved_bytes - c.block_bytes AS reserved_unallocated_bytes
FROM allocator_events o
JOIN allocator_curve c USING (timeline_id, event_index)
LEFT JOIN by_site s USING (timeline_id, event_index)
LEFT JOIN fragmentation f ON f.timeline_id = o.timeline_id AND f.moment = 'oom'
     AND f.event_index = o.event_index AND f.request_fits IS NOT NULL
WHERE o.action = 'oom';
