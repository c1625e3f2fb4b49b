-- Comparing two runs (docs/diff.md): two timelines of the same kind
-- aligned node by node, and what changed between them.
--
-- Node names are not stable between compiles, so nodes are aligned by content: each
-- timeline is a sequence of items (_diff_items: its nodes; a profiler trace's GPU events
-- in time order; an allocator snapshot's trace entries), each with a signature, and the
-- two sequences are aligned in order by store/align.py (patience diff, exact LCS on small
-- ranges). An alignment is a cache derived from the events of its two timelines: `tlview
-- diff A B` computes and stores it (table alignments); `tlview migrate` and a change of
-- either timeline's events recompute or drop it. The table macros below read it, so they
-- give rows only for pairs aligned before (a read-only session, the TUI, aligns in a
-- temporary table of the same name, which DuckDB reads first).

-- alignments: one row per aligned position of a pair of timelines (a, b).
--   pos: 0, 1, 2... in order; a_step / b_step: the items' steps (NULL on the side the item
--   is missing from); method: same (identical signatures), changed (same loose signature:
--   the same kernel/op, other shapes or dtypes), deleted (in a only), inserted (in b only).
CREATE TABLE IF NOT EXISTS alignments (
    a_timeline_id INTEGER NOT NULL,
    b_timeline_id INTEGER NOT NULL,
    pos           BIGINT NOT NULL,
    a_step        BIGINT,
    b_step        BIGINT,
    method        VARCHAR NOT NULL
);

-- alignment_pairs: one row per aligned pair: the algorithm's version (an older version's
-- rows are recomputed), the kind of items and the counts of each method.
CREATE TABLE IF NOT EXISTS alignment_pairs (
    a_timeline_id INTEGER NOT NULL,
    b_timeline_id INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    kind          VARCHAR NOT NULL,
    a_items       BIGINT NOT NULL,
    b_items       BIGINT NOT NULL,
    same          BIGINT NOT NULL,
    changed       BIGINT NOT NULL,
    deleted       BIGINT NOT NULL,
    inserted      BIGINT NOT NULL
);

-- _diff_name(name): a kernel or node name without its numeric suffix
-- (triton_poi_fused_add_0 and triton_poi_fused_add_3 are the same kernel of two compiles).
CREATE OR REPLACE MACRO _diff_name(k) AS regexp_replace(k, '_[0-9]+$', '');

-- _diff_kind(format): which timelines can be compared: the same format for compiled
-- timelines; any profiler trace with any other; allocator snapshots with each other.
CREATE OR REPLACE MACRO _diff_kind(fmt) AS
    CASE WHEN fmt IN ('kineto', 'jax_trace') THEN 'trace'
         WHEN fmt = 'cuda_snapshot' THEN 'allocator'
         ELSE fmt END;

-- _diff_items: what is aligned, per timeline, in order of step.
--   step: the node's step (compiled timelines); the GPU event's rank in time order (a
--     profiler trace: kernels, collectives, copies, fills); the trace entry's event_index
--     (an allocator snapshot);
--   item: the node name / kernel name / 'action size' of the entry; kernel: the kernel it
--     ran (NULL when none); detail: its origin (ATen ops, XLA op_name, the CPU op that
--     launched a GPU event, an allocation's site);
--   sig: the full signature: node class, IR type, kernel without numeric suffix, origin,
--     and the dtypes and shapes it outputs (sorted), or a GPU event's grid and block, or
--     an allocator entry's action, size and site; loose_sig: the same without shapes,
--     dtypes and sizes (how a changed node is told);
--   live_bytes, alloc_bytes, freed_bytes: memory_curve at the step; for a snapshot the
--     allocated bytes after the entry and the entry's size if it allocs / frees; for a
--     trace the allocator's total_allocated when the event starts (the [memory] events
--     of the event's own device: a CPU [memory] event says nothing of the GPU's);
--   time_ns: the measured time: the node's (node_times, of the lowest-numbered trace
--     attached), the GPU event's duration;
--   ts_ns: when it happened, where the dump says: the GPU event's start, the allocator
--     entry's time (time_us x 1000); NULL for compiled nodes.
-- _diff_signatures is the same without the compiled nodes' measured times (what the
-- alignment reads: cheap).
CREATE OR REPLACE VIEW _diff_signatures AS
WITH outs AS (
    SELECT timeline_id, alloc_step AS step,
           list_sort(list(COALESCE(dtype, '?') || COALESCE(shape, size_expr, '?')))::VARCHAR
               AS outputs
    FROM buffers WHERE alloc_step IS NOT NULL AND NOT is_input GROUP BY ALL
), compiled AS (
    SELECT n.timeline_id, n.step, n.node AS item, n.kernel,
           COALESCE(json_extract_string(n.attrs, '$.op_name'),
                    array_to_string(from_json(json_extract(n.attrs, '$.original_aten'),
                                              '["VARCHAR"]'), ','),
                    array_to_string(regexp_extract_all(json_extract_string(n.attrs, '$.loop_body'),
                                                       'ops\.(\w+)\(', 1), ',')) AS detail,
           n.node_class, n.ir_type,
           COALESCE(json_extract_string(n.attrs, '$.fusion_kind'), '') AS fusion_kind,
           COALESCE(json_extract_string(n.attrs, '$.shape'),
                    json_extract_string(n.attrs, '$.annotation'), '') AS own_shape
    FROM nodes n
), memory AS (
    SELECT c.timeline_id, c.step, c.item, c.kernel, c.detail,
           concat_ws('|', c.node_class, c.ir_type, _diff_name(c.kernel), c.detail, c.fusion_kind,
                     c.own_shape, o.outputs) AS sig,
           concat_ws('|', c.node_class, c.ir_type, _diff_name(c.kernel), c.detail, c.fusion_kind)
               AS loose_sig,
           m.live_bytes, m.alloc_bytes, m.freed_bytes, CAST(NULL AS BIGINT) AS time_ns,
           CAST(NULL AS BIGINT) AS ts_ns
    FROM compiled c
    LEFT JOIN outs o USING (timeline_id, step)
    LEFT JOIN memory_curve m USING (timeline_id, step)
), gpu AS (
    SELECT l.timeline_id, l.seq, l.kernel, l.category, l.cpu_op, l.ts_ns, l.dur_ns, l.device,
           json_extract_string(g.attrs, '$.args.grid') AS grid,
           json_extract_string(g.attrs, '$.args.block') AS block,
           row_number() OVER (PARTITION BY l.timeline_id ORDER BY l.ts_ns, l.seq) - 1 AS step
    FROM kernel_launches l JOIN gpu_activity g USING (timeline_id, seq)
), trace AS (
    SELECT g.timeline_id, g.step, g.kernel AS item, g.kernel, g.cpu_op AS detail,
           concat_ws('|', g.category, _diff_name(g.kernel), g.grid, g.block) AS sig,
           concat_ws('|', g.category, _diff_name(COALESCE(g.cpu_op, g.kernel))) AS loose_sig,
           mm.total_allocated AS live_bytes, CAST(NULL AS BIGINT) AS alloc_bytes,
           CAST(NULL AS BIGINT) AS freed_bytes, g.dur_ns AS time_ns, g.ts_ns
    FROM gpu g
    ASOF LEFT JOIN measured_memory mm
      ON mm.timeline_id = g.timeline_id AND mm.device IS NOT DISTINCT FROM g.device
     AND g.ts_ns >= mm.ts_ns
), allocator AS (
    SELECT e.timeline_id, e.event_index AS step, e.action || ' ' || e.size AS item,
           CAST(NULL AS VARCHAR) AS kernel, s.site AS detail,
           concat_ws('|', e.action, e.size, e.stream, s.site) AS sig,
           concat_ws('|', e.action, e.stream, s.site) AS loose_sig,
           c.allocated_bytes AS live_bytes,
           CASE WHEN e.action = 'alloc' THEN e.size END AS alloc_bytes,
           CASE WHEN e.action = 'free_completed' THEN e.size END AS freed_bytes,
           CAST(NULL AS BIGINT) AS time_ns, e.time_us * 1000 AS ts_ns
    FROM allocator_events e
    LEFT JOIN allocator_stacks s USING (source_id, stack_id)
    LEFT JOIN allocator_curve c USING (timeline_id, event_index)
)
SELECT * FROM memory
UNION ALL SELECT * FROM trace
UNION ALL SELECT * FROM allocator;

CREATE OR REPLACE VIEW _diff_items AS
WITH nt AS (
    SELECT timeline_id, step, arg_min(total_ns, measured_timeline_id) AS total_ns
    FROM node_times GROUP BY ALL
)
SELECT s.* EXCLUDE (time_ns), COALESCE(s.time_ns, nt.total_ns) AS time_ns
FROM _diff_signatures s LEFT JOIN nt USING (timeline_id, step);

-- timeline_diff(a, b): the aligned steps of two timelines (tlview diff aligns them first),
-- in order.
--   pos, method (same | changed | deleted | inserted), a_step / b_step, a_node / b_node
--   (NULL on the side a node is missing from), a_kernel / b_kernel, a_detail / b_detail
--   (origin, CPU op, site: _diff_items.detail), a_live_bytes / b_live_bytes, alloc and
--   freed bytes, a_time_ns / b_time_ns (measured, where attached) and the deltas b - a
--   (NULL unless both sides have the figure).
CREATE OR REPLACE MACRO timeline_diff(a_tid, b_tid) AS TABLE
WITH items AS MATERIALIZED (SELECT * FROM _diff_items WHERE timeline_id IN (a_tid, b_tid))
SELECT al.pos, al.method, al.a_step, al.b_step, ia.item AS a_node, ib.item AS b_node,
       ia.kernel AS a_kernel, ib.kernel AS b_kernel, ia.detail AS a_detail,
       ib.detail AS b_detail,
       ia.live_bytes AS a_live_bytes, ib.live_bytes AS b_live_bytes,
       ib.live_bytes - ia.live_bytes AS delta_live_bytes,
       ia.alloc_bytes AS a_alloc_bytes, ib.alloc_bytes AS b_alloc_bytes,
       ib.alloc_bytes - ia.alloc_bytes AS delta_alloc_bytes,
       ia.freed_bytes AS a_freed_bytes, ib.freed_bytes AS b_freed_bytes,
       ib.freed_bytes - ia.freed_bytes AS delta_freed_bytes,
       ia.time_ns AS a_time_ns, ib.time_ns AS b_time_ns, ib.time_ns - ia.time_ns AS delta_time_ns
FROM (SELECT * FROM alignments WHERE a_timeline_id = a_tid AND b_timeline_id = b_tid) al
LEFT JOIN items ia ON ia.timeline_id = a_tid AND ia.step = al.a_step
LEFT JOIN items ib ON ib.timeline_id = b_tid AND ib.step = al.b_step
ORDER BY al.pos;

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

-- kernel_time_diff(a, b): measured time per kernel of two aligned timelines (profiler
-- traces, or compiled timelines with a trace attached): one row per kernel of a and the
-- kernel of b it is aligned with (NULL on the side it is missing from), over the aligned
-- steps that have a time.
--   method: same | changed (the aligned kernels differ: another kernel for the same op) |
--   deleted | inserted; a_launches / b_launches, a_time_ns / b_time_ns, delta_ns = b - a;
--   share: delta_ns / the total delta (the rows' delta_ns sum to it), NULL if it is 0.
--   Ordered by |delta_ns|, largest first.
CREATE OR REPLACE MACRO kernel_time_diff(a_tid, b_tid) AS TABLE
WITH d AS (
    SELECT CASE WHEN method IN ('same', 'changed')
                     AND _diff_name(a_kernel) IS NOT DISTINCT FROM _diff_name(b_kernel)
                THEN 'same' ELSE method END AS method,
           a_kernel, b_kernel, a_step, b_step, a_time_ns, b_time_ns
    FROM timeline_diff(a_tid, b_tid)
    WHERE a_time_ns IS NOT NULL OR b_time_ns IS NOT NULL
), k AS (
    SELECT method, a_kernel, b_kernel, count(a_time_ns) AS a_launches,
           count(b_time_ns) AS b_launches,
           CAST(COALESCE(sum(a_time_ns), 0) AS BIGINT) AS a_time_ns,
           CAST(COALESCE(sum(b_time_ns), 0) AS BIGINT) AS b_time_ns
    FROM d GROUP BY ALL
)
SELECT method, a_kernel, b_kernel, a_launches, b_launches, a_time_ns, b_time_ns,
       b_time_ns - a_time_ns AS delta_ns,
       (b_time_ns - a_time_ns) / nullif(sum(b_time_ns - a_time_ns) OVER (), 0) AS share
FROM k
ORDER BY abs(b_time_ns - a_time_ns) DESC, a_kernel NULLS LAST, b_kernel;

-- site_diff(a, b): two allocator snapshots' (or two memory profiles') allocation sites
-- side by side (no alignment needed): bytes live at each one's peak per site
-- (allocation_sites.bytes_at_peak; memory_profile_sites.bytes), the delta b - a (the rows
-- sum to the difference of the two peaks), allocations in each window (a profile: the
-- buffers live at its instant) and each site's own maximum (a profile: its bytes).
-- Ordered by |delta_bytes|, largest first.
CREATE OR REPLACE MACRO site_diff(a_tid, b_tid) AS TABLE
WITH s AS (
    SELECT timeline_id, site, bytes_at_peak, allocations, max_bytes FROM allocation_sites
    WHERE timeline_id IN (a_tid, b_tid)
    UNION ALL
    SELECT timeline_id, site, bytes, buffers, bytes FROM memory_profile_sites
    WHERE timeline_id IN (a_tid, b_tid)
), sa AS (SELECT * FROM s WHERE timeline_id = a_tid),
sb AS (SELECT * FROM s WHERE timeline_id = b_tid)
SELECT COALESCE(sb.site, sa.site) AS site,
       COALESCE(sa.bytes_at_peak, 0) AS a_bytes_at_peak,
       COALESCE(sb.bytes_at_peak, 0) AS b_bytes_at_peak,
       COALESCE(sb.bytes_at_peak, 0) - COALESCE(sa.bytes_at_peak, 0) AS delta_bytes,
       COALESCE(sa.allocations, 0) AS a_allocations, COALESCE(sb.allocations, 0) AS b_allocations,
       sa.max_bytes AS a_max_bytes, sb.max_bytes AS b_max_bytes
FROM sa FULL JOIN sb ON sa.site = sb.site
ORDER BY abs(COALESCE(sb.bytes_at_peak, 0) - COALESCE(sa.bytes_at_peak, 0)) DESC, site;
