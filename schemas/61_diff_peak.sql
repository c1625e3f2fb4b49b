-- Two timelines' peaks compared: what each holds at its peak, and the change.

-- _peak_holdings(tid): what is live at a timeline's peak, one row per holder, the bytes
-- summing exactly to the peak (peak_memory.peak_bytes; allocator_peak.allocated_bytes).
--   holder: the buffer (a block's address in hex for a snapshot; a memory profile's
--   sample, matched as blocks are: by site and size, then site); bytes: what it counts
--   at the peak (a buffer in an XLA allocation: the byte ranges it is the first live
--   value over, so that shared bytes count once, as memory_curve counts them; a block:
--   its requested size); key_step: the step that made it (producer step; the alloc
--   entry; NULL: made before the snapshot's window); rank_in_step: its place among the
--   holders made at that step (dump line order); match_key: what a twin must share when
--   the producers are not aligned (dtype and shape; site and size); group_key: the
--   looser key of a grown or shrunk twin made at unaligned steps (a block's site; NULL
--   for buffers: a buffer of another node is not the same buffer grown); what: dtype
--   and shape, or site; producer: the node at its alloc step.
CREATE OR REPLACE MACRO _peak_holdings(tid) AS TABLE
WITH p AS (SELECT peak_step FROM peak_memory WHERE timeline_id = tid),
c AS (SELECT cb.* FROM _counted cb WHERE cb.timeline_id = tid),
ranked AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.alloc_step ORDER BY c.line, c.buffer) AS rank_in_step
    FROM c
), live AS (
    SELECT r.* FROM ranked r, p WHERE r.alloc_step <= p.peak_step AND p.peak_step <= r.last_step
), seg AS (
    -- shared allocations: each elementary range live at the peak, owned by one value
    SELECT s.allocation, s.lo, s.hi,
           arg_min(l.buffer, (l.alloc_step, l.buffer)) AS owner
    FROM (SELECT DISTINCT allocation, lo, hi FROM _segments WHERE timeline_id = tid) s
    JOIN live l ON l.allocation = s.allocation AND l."offset" <= s.lo
               AND l."offset" + l.bytes >= s.hi
    GROUP BY s.allocation, s.lo, s.hi
), owned AS (SELECT owner AS buffer, sum(hi - lo) AS bytes FROM seg GROUP BY owner),
nd AS (SELECT step, node FROM nodes WHERE timeline_id = tid)
SELECT l.buffer AS holder,
       CAST(CASE WHEN l.allocation IS NULL THEN COALESCE(l.bytes, 0)
                 ELSE COALESCE(o.bytes, 0) END AS BIGINT) AS bytes,
       l.alloc_step AS key_step, l.rank_in_step,
       COALESCE(l.dtype, '?') || COALESCE(l.shape, l.size_expr, '?') AS match_key,
       CAST(NULL AS VARCHAR) AS group_key,
       COALESCE(l.dtype, '') || COALESCE(l.shape, l.size_expr, '') AS what,
       COALESCE(l.producer, nd.node) AS producer
FROM live l LEFT JOIN owned o USING (buffer) LEFT JOIN nd ON nd.step = l.alloc_step
WHERE (SELECT format FROM timeline_records WHERE timeline_id = tid) <> 'jax_memory_profile'
UNION ALL
-- a memory profile's buffers: all made before its one instant, matched as blocks are
SELECT mp.buffer, mp.bytes, CAST(NULL AS BIGINT),
       row_number() OVER (ORDER BY mp.buffer), mp.site || '|' || mp.bytes, mp.site,
       COALESCE(mp.dtype || mp.shape || ' ', '') || mp.site, CAST(NULL AS VARCHAR)
FROM memory_profile_buffers mp WHERE mp.timeline_id = tid
UNION ALL
SELECT printf('0x%x', lb.address), lb.requested_size, lb.alloc_index,
       CAST(1 AS BIGINT), lb.site || '|' || lb.requested_size, lb.site, lb.site, CAST(NULL AS VARCHAR)
FROM allocator_peak ap, LATERAL blocks_live_at(tid, ap.event_index) lb
WHERE ap.timeline_id = tid;

-- peak_diff(a, b): the buffers live at each timeline's peak, matched to each other, so
-- that the difference of the peaks is explained row by row: Σ delta_bytes = b_peak_bytes -
-- a_peak_bytes exactly (buffers holding no bytes at either peak, such as views and
-- storages handed over by reuse, are left out).
--   status: new (live at b's peak only), gone (at a's only), grown, shrunk, same;
--   a_buffer / b_buffer (a block's address for snapshots), a_bytes / b_bytes (what each
--   holds at its peak, _peak_holdings), delta_bytes = b_bytes - a_bytes;
--   matched_by: aligned (made by aligned steps: same node, or same allocation entry),
--   same_key (same dtype and shape, or same site and size, made at unaligned steps),
--   same_group (blocks of the same site: grown or shrunk), NULL (no twin);
--   what: dtype and shape / site (b's, else a's); a_producer / b_producer;
--   a_peak_step / b_peak_step (event_index for snapshots), a_peak_bytes / b_peak_bytes.
--   Ordered by |delta_bytes|, largest first.
CREATE OR REPLACE MACRO peak_diff(a_tid, b_tid) AS TABLE
WITH al AS (
    SELECT a_step, b_step FROM alignments
    WHERE a_timeline_id = a_tid AND b_timeline_id = b_tid AND a_step IS NOT NULL
      AND b_step IS NOT NULL
), ha AS (SELECT * FROM _peak_holdings(a_tid)),
hb AS (SELECT * FROM _peak_holdings(b_tid)),
-- Each tier joins on ONE key (a list), so that no join order can pair every holder of
-- one rank, or of one dtype and shape, with every other first (hundreds of millions of
-- rows on 100k-node timelines).
a1 AS (
    SELECT ha.holder, [al.b_step, ha.rank_in_step] AS k
    FROM ha JOIN al ON al.a_step = ha.key_step
), t1 AS (
    SELECT a1.holder AS ah, hb.holder AS bh, 'aligned' AS how
    FROM a1 JOIN hb ON a1.k = [hb.key_step, hb.rank_in_step]
), ra AS (
    SELECT holder, [match_key, CAST(row_number() OVER (PARTITION BY match_key
                   ORDER BY key_step NULLS FIRST, holder) AS VARCHAR)] AS k
    FROM ha ANTI JOIN t1 ON t1.ah = ha.holder
), rb AS (
    SELECT holder, [match_key, CAST(row_number() OVER (PARTITION BY match_key
                   ORDER BY key_step NULLS FIRST, holder) AS VARCHAR)] AS k
    FROM hb ANTI JOIN t1 ON t1.bh = hb.holder
), t2 AS (
    SELECT ra.holder AS ah, rb.holder AS bh, 'same_key' AS how FROM ra JOIN rb USING (k)
), t12 AS (SELECT * FROM t1 UNION ALL SELECT * FROM t2),
ga AS (
    SELECT holder, [group_key, CAST(row_number() OVER (PARTITION BY group_key
                   ORDER BY key_step NULLS FIRST, holder) AS VARCHAR)] AS k
    FROM ha ANTI JOIN t12 ON t12.ah = ha.holder
    WHERE ha.group_key IS NOT NULL
), gb AS (
    SELECT holder, [group_key, CAST(row_number() OVER (PARTITION BY group_key
                   ORDER BY key_step NULLS FIRST, holder) AS VARCHAR)] AS k
    FROM hb ANTI JOIN t12 ON t12.bh = hb.holder
    WHERE hb.group_key IS NOT NULL
), pairs AS (
    SELECT * FROM t12
    UNION ALL
    SELECT ga.holder, gb.holder, 'same_group' FROM ga JOIN gb USING (k)
), rows AS (
    SELECT ha.holder AS a_buffer, p.bh AS b_buffer, p.how FROM ha LEFT JOIN pairs p ON p.ah = ha.holder
    UNION ALL
    SELECT NULL, hb.holder, NULL FROM hb ANTI JOIN pairs p ON p.bh = hb.holder
), peaks AS (
    SELECT COALESCE((SELECT peak_bytes FROM peak_memory WHERE timeline_id = a_tid),
                    (SELECT allocated_bytes FROM allocator_peak WHERE timeline_id = a_tid)) AS a_peak_bytes,
           COALESCE((SELECT peak_bytes FROM peak_memory WHERE timeline_id = b_tid),
                    (SELECT allocated_bytes FROM allocator_peak WHERE timeline_id = b_tid)) AS b_peak_bytes,
           COALESCE((SELECT peak_step FROM peak_memory WHERE timeline_id = a_tid),
                    (SELECT event_index FROM allocator_peak WHERE timeline_id = a_tid)) AS a_peak_step,
           COALESCE((SELECT peak_step FROM peak_memory WHERE timeline_id = b_tid),
                    (SELECT event_index FROM allocator_peak WHERE timeline_id = b_tid)) AS b_peak_step
)
SELECT CASE WHEN x.a_buffer IS NULL THEN 'new' WHEN x.b_buffer IS NULL THEN 'gone'
            WHEN hb.bytes > ha.bytes THEN 'grown' WHEN hb.bytes < ha.bytes THEN 'shrunk'
            ELSE 'same' END AS status,
       COALESCE(hb.bytes, 0) - COALESCE(ha.bytes, 0) AS delta_bytes,
       x.a_buffer, x.b_buffer, ha.bytes AS a_bytes, hb.bytes AS b_bytes, x.how AS matched_by,
       COALESCE(hb.what, ha.what) AS what, ha.producer AS a_producer, hb.producer AS b_producer,
       peaks.a_peak_step, peaks.b_peak_step, peaks.a_peak_bytes, peaks.b_peak_bytes
FROM rows x
LEFT JOIN ha ON ha.holder = x.a_buffer
LEFT JOIN hb ON hb.holder = x.b_buffer, peaks
WHERE COALESCE(ha.bytes, 0) > 0 OR COALESCE(hb.bytes, 0) > 0
ORDER BY abs(COALESCE(hb.bytes, 0) - COALESCE(ha.bytes, 0)) DESC, x.a_buffer NULLS LAST,
         x.b_buffer;
