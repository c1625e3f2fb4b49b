-- Comparing two runs (docs/diff.md): two timelines of the same kind
-- aligned node by node, and what changed between them.
--
-- Node names are not stable between compiles, so nodes are aligned by content: each
-- timeline is a sequence of items (_diff_items: its nodes; a profiler trace's GPU events
-- in time order; an allocator snapshot's trace entries), each with a signature, and the
-- two sequences are aligned in order by store/align.py (patience diff, exact LCS on small
-- ranges). An alignment is a cache derived from the events of its two timelines: `tlview
-- diff A B` computes and stores it (table alignments); `tlview migrate` and a change of
-- either timeline's events recompute or drop it. The table macros (timeline_diff, peak_diff,
-- kernel_time_diff, site_diff) read it, so they give rows only for pairs aligned before
-- (a read-only session, the TUI, aligns in a temporary table of the same name, which
-- DuckDB reads first).

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
