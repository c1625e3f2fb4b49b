-- Measured views: profiler traces (formats kineto, jax_trace), one timeline per trace/rank.
-- Times are integer nanoseconds from the trace's own clock (ts_ns, dur_ns).
-- Categories (see ingest/kineto.py): kernel, comm, memcpy, memset (GPU);
-- runtime, cpu_op, comm_call, annotation, gpu_annotation, python, memory, other.

-- measured: every measured event, with its end and the launch-join keys.
--   stream: the GPU stream for GPU events, the thread id for CPU events;
--   correlation: joins a GPU event to the runtime call that launched it;
--   ext: Kineto's External id, joins a runtime call to the CPU op it ran under;
--   rank: the trace's distributed rank (NULL when the trace does not say);
--   attrs: the rest of the trace event (JSON: cat, pid, tid, args), e.g. attrs.args.grid.
CREATE OR REPLACE VIEW measured AS
SELECT e.timeline_id, e.seq, e.name, e.category, e.device, e.stream, e.ts_ns, e.dur_ns,
       e.ts_ns + e.dur_ns AS end_ns, e.correlation, e.bytes,
       CASE WHEN e.category IN ('runtime', 'cpu_op', 'comm_call')
            THEN TRY_CAST(json_extract(e.attrs, '$.args."External id"') AS BIGINT) END AS ext,
       TRY_CAST(json_extract(t.attrs, '$.rank') AS INTEGER) AS rank, e.attrs
FROM events_kernel_measured e JOIN timeline_records t USING (timeline_id);

-- gpu_activity: what ran on a GPU: kernels, communication kernels, copies and fills.
CREATE OR REPLACE VIEW gpu_activity AS
SELECT e.timeline_id, e.seq, e.name, e.category, e.device, e.stream, e.ts_ns, e.dur_ns,
       e.ts_ns + e.dur_ns AS end_ns, e.correlation, e.bytes, CAST(NULL AS BIGINT) AS ext,
       TRY_CAST(json_extract(t.attrs, '$.rank') AS INTEGER) AS rank, e.attrs
FROM events_kernel_measured e JOIN timeline_records t USING (timeline_id)
WHERE e.category IN ('kernel', 'comm', 'memcpy', 'memset');

-- kernels_measured: per timeline and kernel name, its launches and durations.
--   p50_ns / p99_ns are nearest-rank quantiles (the smallest duration with at
--   least 50% / 99% of the launches at or below it).
CREATE OR REPLACE VIEW kernels_measured AS
SELECT timeline_id, name, category, device, count(*) AS launches, sum(dur_ns) AS total_ns,
       avg(dur_ns) AS mean_ns, quantile_disc(dur_ns, 0.5) AS p50_ns,
       quantile_disc(dur_ns, 0.99) AS p99_ns, min(dur_ns) AS min_ns, max(dur_ns) AS max_ns
FROM gpu_activity
GROUP BY timeline_id, name, category, device;

-- kernel_launches: each GPU event with the runtime call that launched it (same
-- correlation id) and the innermost CPU op around that call (same External id).
--   launch_ts_ns: when the CPU asked; thread: the launching thread;
--   graph_launch: launched by a CUDA-graph replay (runtime cudaGraphLaunch, or HIP's
--   hipGraphLaunch: every kernel of the replay shares its correlation id).
CREATE OR REPLACE VIEW kernel_launches AS
SELECT g.timeline_id, g.seq, g.name AS kernel, g.category, g.device, g.stream, g.ts_ns,
       g.dur_ns, g.correlation, r.name AS runtime, r.ts_ns AS launch_ts_ns,
       r.stream AS thread, op.name AS cpu_op, op.seq AS cpu_op_seq,
       COALESCE(r.name LIKE '%GraphLaunch%', false) AS graph_launch
FROM gpu_activity g
LEFT JOIN measured r
  ON r.timeline_id = g.timeline_id AND r.category = 'runtime' AND r.correlation = g.correlation
LEFT JOIN measured op
  ON op.timeline_id = g.timeline_id AND op.category IN ('cpu_op', 'comm_call')
 AND op.ext = r.ext;

-- _islands: maximal time intervals during which at least one GPU event of a
-- class runs, per timeline and device. class: 'comm' (communication kernels),
-- 'compute' (all other kernels), 'any' (every GPU event, copies included).
CREATE OR REPLACE VIEW _islands AS
WITH k AS (
    SELECT timeline_id, device, 'comm' AS class, ts_ns AS s, end_ns AS e
    FROM gpu_activity WHERE category = 'comm' AND dur_ns > 0
    UNION ALL
    SELECT timeline_id, device, 'compute', ts_ns, end_ns
    FROM gpu_activity WHERE category = 'kernel' AND dur_ns > 0
    UNION ALL
    SELECT timeline_id, device, 'any', ts_ns, end_ns FROM gpu_activity WHERE dur_ns > 0
), o AS (
    SELECT *, max(e) OVER (PARTITION BY timeline_id, device, class ORDER BY s, e
                           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM k
), g AS (
    SELECT *, sum(CASE WHEN prev_end IS NULL OR s > prev_end THEN 1 ELSE 0 END)
              OVER (PARTITION BY timeline_id, device, class ORDER BY s, e
                    ROWS UNBOUNDED PRECEDING) AS island
    FROM o
)
SELECT timeline_id, device, class, island, min(s) AS s, max(e) AS e
FROM g GROUP BY timeline_id, device, class, island;

-- gpu_busy: per timeline, device and stream, the time something ran on the GPU.
--   busy_ns: union of the GPU events' intervals (kernels, comm, memcpy, memset);
--   span_ns: first start to last end; idle_ns = span_ns - busy_ns.
--   The row with stream NULL is the whole device (all streams together).
CREATE OR REPLACE VIEW gpu_busy AS
WITH per_stream AS (
    SELECT timeline_id, device, stream, ts_ns AS s, end_ns AS e,
           max(end_ns) OVER (PARTITION BY timeline_id, device, stream ORDER BY ts_ns, end_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM gpu_activity WHERE dur_ns > 0
), stream_islands AS (
    SELECT timeline_id, device, stream, s, e,
           sum(CASE WHEN prev_end IS NULL OR s > prev_end THEN 1 ELSE 0 END)
             OVER (PARTITION BY timeline_id, device, stream ORDER BY s, e
                   ROWS UNBOUNDED PRECEDING) AS island
    FROM per_stream
), merged AS (
    SELECT timeline_id, device, stream, min(s) AS s, max(e) AS e
    FROM stream_islands GROUP BY timeline_id, device, stream, island
    UNION ALL
    SELECT timeline_id, device, NULL, s, e FROM _islands WHERE class = 'any'
)
SELECT timeline_id, device, stream, CAST(sum(e - s) AS BIGINT) AS busy_ns,
       max(e) - min(s) AS span_ns, CAST(max(e) - min(s) - sum(e - s) AS BIGINT) AS idle_ns,
       round(100.0 * sum(e - s) / nullif(max(e) - min(s), 0), 2) AS busy_pct,
       min(s) AS first_ns, max(e) AS last_ns
FROM merged GROUP BY timeline_id, device, stream;

-- gpu_gaps(min_ns): stretches longer than min_ns during which nothing ran on a
-- device (between two islands of GPU activity), longest first.
CREATE OR REPLACE MACRO gpu_gaps(min_ns) AS TABLE
SELECT * FROM (
    SELECT timeline_id, device, e AS gap_start_ns,
           lead(s) OVER (PARTITION BY timeline_id, device ORDER BY s) AS gap_end_ns,
           lead(s) OVER (PARTITION BY timeline_id, device ORDER BY s) - e AS gap_ns
    FROM _islands WHERE class = 'any'
) WHERE gap_ns > min_ns
ORDER BY gap_ns DESC, timeline_id, gap_start_ns;

-- _compute_cover: the compute islands of each device with the compute time covered
-- before each (cum_before), so that the compute time inside any [t0, t1) is
-- cover(t1) - cover(t0), cover(t) = cum_before + clamp(t - s, 0, e - s) of the last
-- island starting at or before t (an ASOF join: linear, no pairwise comparison).
CREATE OR REPLACE VIEW _compute_cover AS
SELECT timeline_id, device, s, e,
       COALESCE(sum(e - s) OVER (PARTITION BY timeline_id, device ORDER BY s
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
           AS cum_before
FROM _islands WHERE class = 'compute';

-- comm_overlap: per communication kernel, how much of it computation hid.
--   overlapped_ns: the part of [ts, end) during which at least one compute
--   kernel (category 'kernel', any stream of the same device) ran;
--   exposed_ns = dur_ns - overlapped_ns. Copies/fills and CPU events never count.
--   op / group_size / bytes: from the kernel's collective record where the trace has it.
CREATE OR REPLACE VIEW comm_overlap AS
WITH c AS (SELECT * FROM gpu_activity WHERE category = 'comm'),
a AS (
    SELECT c.seq, c.timeline_id,
           COALESCE(k.cum_before + least(greatest(c.ts_ns - k.s, 0), k.e - k.s), 0) AS cover_s
    FROM c ASOF LEFT JOIN _compute_cover k
      ON k.timeline_id = c.timeline_id AND k.device = c.device AND c.ts_ns >= k.s
), b AS (
    SELECT c.seq, c.timeline_id,
           COALESCE(k.cum_before + least(greatest(c.end_ns - k.s, 0), k.e - k.s), 0) AS cover_e
    FROM c ASOF LEFT JOIN _compute_cover k
      ON k.timeline_id = c.timeline_id AND k.device = c.device AND c.end_ns >= k.s
)
SELECT c.timeline_id, c.rank, c.device, c.stream, c.name, c.ts_ns, c.dur_ns,
       CAST(b.cover_e - a.cover_s AS BIGINT) AS overlapped_ns,
       CAST(c.dur_ns - (b.cover_e - a.cover_s) AS BIGINT) AS exposed_ns,
       round(100.0 * (b.cover_e - a.cover_s) / nullif(c.dur_ns, 0), 2) AS overlap_pct,
       json_extract_string(c.attrs, '$.args."Collective name"') AS op,
       TRY_CAST(json_extract(c.attrs, '$.args."Group size"') AS INTEGER) AS group_size,
       c.bytes, c.correlation, c.seq
FROM c JOIN a USING (timeline_id, seq) JOIN b USING (timeline_id, seq);

-- comm_overlap_summary: per timeline (rank) and device, the overlap of
-- communication with computation, as defined in docs/profiles.md:
--   comm_ns: time during which at least one communication kernel runs;
--   overlapped_ns: time during which at least one communication kernel AND at
--     least one computation kernel run; exposed_ns = comm_ns - overlapped_ns;
--   overlap_pct = 100 * overlapped_ns / comm_ns.
-- Communication = collective kernels (NCCL, RCCL); computation = all other GPU
-- kernels; memcpy/memset are neither; CPU events never count.
-- Computed by one sweep over kernel starts (+1) and ends (-1) per class.
CREATE OR REPLACE VIEW comm_overlap_summary AS
WITH k AS (
    SELECT timeline_id, device, ts_ns AS s, end_ns AS e, category = 'comm' AS is_comm
    FROM gpu_activity WHERE category IN ('kernel', 'comm') AND dur_ns > 0
), d AS (
    SELECT timeline_id, device, s AS t, CASE WHEN is_comm THEN 1 ELSE 0 END AS dc,
           CASE WHEN is_comm THEN 0 ELSE 1 END AS dk FROM k
    UNION ALL
    SELECT timeline_id, device, e, CASE WHEN is_comm THEN -1 ELSE 0 END,
           CASE WHEN is_comm THEN 0 ELSE -1 END FROM k
), g AS (
    SELECT timeline_id, device, t, sum(dc) AS dc, sum(dk) AS dk FROM d GROUP BY ALL
), r AS (
    SELECT timeline_id, device, t,
           sum(dc) OVER w AS n_comm, sum(dk) OVER w AS n_comp,
           lead(t) OVER (PARTITION BY timeline_id, device ORDER BY t) - t AS len
    FROM g WINDOW w AS (PARTITION BY timeline_id, device ORDER BY t ROWS UNBOUNDED PRECEDING)
), sums AS (
    SELECT timeline_id, device,
           CAST(COALESCE(sum(len) FILTER (WHERE n_comm > 0), 0) AS BIGINT) AS comm_ns,
           CAST(COALESCE(sum(len) FILTER (WHERE n_comm > 0 AND n_comp > 0), 0) AS BIGINT)
               AS overlapped_ns
    FROM r GROUP BY timeline_id, device
), n AS (
    SELECT timeline_id, device, count(*) AS n_comm_kernels
    FROM gpu_activity WHERE category = 'comm' GROUP BY timeline_id, device
)
SELECT n.timeline_id, TRY_CAST(json_extract(t.attrs, '$.rank') AS INTEGER) AS rank, n.device,
       n.n_comm_kernels, s.comm_ns, s.overlapped_ns, s.comm_ns - s.overlapped_ns AS exposed_ns,
       round(100.0 * s.overlapped_ns / nullif(s.comm_ns, 0), 2) AS overlap_pct
FROM n JOIN timeline_records t ON t.timeline_id = n.timeline_id
JOIN sums s ON s.timeline_id = n.timeline_id AND s.device = n.device;

-- profiler_steps: the ProfilerStep#N ranges of each trace (CPU side).
CREATE OR REPLACE VIEW profiler_steps AS
SELECT timeline_id, TRY_CAST(split_part(name, '#', 2) AS BIGINT) AS step, name,
       ts_ns, dur_ns, end_ns, seq
FROM measured
WHERE category = 'annotation' AND name LIKE 'ProfilerStep#%';

-- step_totals: per trace and ProfilerStep, the GPU work launched during it (a
-- GPU event belongs to the step whose CPU range holds its launching runtime call).
--   kernel_ns / comm_ns / memcpy_ns / memset_ns: summed durations by category;
--   n_kernels: GPU events launched; gpu_first_ns / gpu_last_ns: their extent.
CREATE OR REPLACE VIEW step_totals AS
WITH l AS (
    SELECT l.*, p.seq AS p_seq
    FROM kernel_launches l ASOF JOIN profiler_steps p
      ON p.timeline_id = l.timeline_id AND l.launch_ts_ns >= p.ts_ns
    WHERE l.launch_ts_ns < p.end_ns
)
SELECT p.timeline_id, p.step, p.name, p.dur_ns AS cpu_dur_ns,
       count(l.seq) AS n_gpu_events,
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'kernel'), 0) AS BIGINT) AS kernel_ns,
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'comm'), 0) AS BIGINT) AS comm_ns,
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'memcpy'), 0) AS BIGINT) AS memcpy_ns,
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'memset'), 0) AS BIGINT) AS memset_ns,
       min(l.ts_ns) AS gpu_first_ns, max(l.ts_ns + l.dur_ns) AS gpu_last_ns
FROM profiler_steps p
LEFT JOIN l ON l.timeline_id = p.timeline_id AND l.p_seq = p.seq
GROUP BY p.timeline_id, p.seq, p.step, p.name, p.dur_ns;

-- measured_memory: the allocator's own curve from [memory] events, per device.
--   bytes: this event's change (+alloc, -free); total_allocated / total_reserved:
--   the allocator's totals just after it.
CREATE OR REPLACE VIEW measured_memory AS
SELECT timeline_id, device, ts_ns, seq, bytes,
       TRY_CAST(json_extract(attrs, '$.args."Total Allocated"') AS BIGINT) AS total_allocated,
       TRY_CAST(json_extract(attrs, '$.args."Total Reserved"') AS BIGINT) AS total_reserved,
       TRY_CAST(json_extract(attrs, '$.args.Addr') AS UBIGINT) AS addr
FROM measured WHERE category = 'memory';

-- measured_peak_memory: per trace and device, the largest total_allocated seen
-- and the first time it was reached.
CREATE OR REPLACE VIEW measured_peak_memory AS
SELECT timeline_id, device, total_allocated AS peak_allocated, ts_ns AS peak_ts_ns,
       max(total_reserved) OVER (PARTITION BY timeline_id, device) AS peak_reserved
FROM measured_memory
QUALIFY row_number() OVER (PARTITION BY timeline_id, device
                           ORDER BY total_allocated DESC, ts_ns, seq) = 1;

-- ===== Attaching measured work to the nodes of the output code =====
-- A trace's compiled regions are the CPU ranges of its '## Call CompiledFxGraph
-- <key> ##' annotations. A GPU event belongs to a call when the runtime call that
-- launched it ran on the call's thread inside that range; a CPU op when it ran on that
-- thread inside it. Output-code timelines are the wrapper timelines (format
-- inductor_wrapper: output_code.py, TORCH_LOGS and TORCH_TRACE alike); their nodes carry the name a
-- trace gives them: the Triton or C++ kernel's own name (the CPU profiler prefixes a
-- C++ kernel with graph_<N>_ when Inductor records it, TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1),
-- aten::X for extern_kernels.X, NS::OP for torch.ops.NS.OP.overload.
--   Which graph a call ran: a GPU graph's call launches the same Triton kernels in the
--   same order (on the same device, where both say); a CPU graph's call holds, as its
--   top-level CPU ops, the graph's extern ops (and its C++ kernels, where the trace
--   records them) in the same order. Among the output-code timelines that match:
--   * copies of one graph (the same AOT id and the same launches: its output_code.py,
--     its copy in a TORCH_LOGS log, in a TORCH_TRACE log) are one candidate, attributed
--     through one of them, its representative (the one under the trace's folder, then
--     of the trace's rank, then naming the call's key, then the first ingested); the
--     others are copies (output_node_times.copy_of);
--   * candidates are narrowed, in turn, to those whose FX-graph cache key (a TORCH_TRACE
--     log's fx_graph_cache_miss/hit) is the call's key, then to those under the trace's
--     folder, then to those of the trace's rank, each where any candidate is;
--   * when k > 1 candidates remain (different graphs launching the same kernels, e.g.
--     two identical blocks' 0_forward and 1_forward, whose calls carry no key), the call
--     is ambiguous: each of its events is split over the k graphs, confidence / k, and
--     its duration shared out in integer ns (dur // k to each, one more ns to the first
--     dur % k of them by timeline id), so every event is attributed once in total.
--   Triton kernels attach by name and launch order within the call (the k-th launch
--   of triton_X to the k-th node of triton_X): method 'triton_name_order'.
--   Extern kernels (cuBLAS nvjet_*, attention, NCCL ...) attach through the CPU op
--   that launched them: the k-th CPU op named aten::mm in the call is the k-th
--   extern_kernels.mm node, and every non-Triton GPU event launched inside it is
--   that node's: method 'extern_cpu_op'. confidence 1.0 when the call holds as many
--   such ops as the graph has nodes of that name, else 0.5.
--   CPU graphs: the k-th top-level CPU op of a name in the call is the k-th node of that
--   name, its duration the node's: method 'cpu_op' (confidence as for extern ops).

-- _compiled_calls: each call of a compiled graph in a trace.
CREATE OR REPLACE VIEW _compiled_calls AS
SELECT timeline_id, seq AS call_seq,
       trim(regexp_replace(name, '^## Call CompiledFxGraph|##$', '', 'g')) AS graph_key,
       stream AS thread, ts_ns, end_ns
FROM measured
WHERE category = 'annotation' AND name LIKE '## Call CompiledFxGraph%';

-- _call_launches: the GPU events launched during each compiled call (a CUDA-graph
-- replay's kernels all carry the time of its cudaGraphLaunch: order by launch_ts_ns, then
-- ts_ns, for the order they ran in).
CREATE OR REPLACE VIEW _call_launches AS
SELECT c.timeline_id, c.call_seq, l.seq, l.kernel, l.category, l.device, l.ts_ns, l.dur_ns,
       l.launch_ts_ns, l.correlation, l.graph_launch
FROM _compiled_calls c JOIN kernel_launches l
  ON l.timeline_id = c.timeline_id AND l.thread = c.thread
 AND l.launch_ts_ns >= c.ts_ns AND l.launch_ts_ns < c.end_ns;

-- _call_cpu_ops: the top-level CPU ops of each compiled call (on its thread, inside its
-- range, in no other CPU op of the call), with the name a graph node would have
-- (graph_<N>_ prefix of a recorded C++ kernel removed) and their order by name.
CREATE OR REPLACE VIEW _call_cpu_ops AS
WITH ops AS (
    SELECT c.timeline_id, c.call_seq, o.seq AS op_seq, o.name,
           regexp_replace(o.name, '^graph_\d+_', '') AS op_name, o.ts_ns, o.end_ns, o.dur_ns,
           max(o.end_ns) OVER (PARTITION BY c.timeline_id, c.call_seq
                               ORDER BY o.ts_ns, o.end_ns DESC, o.seq
                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev_end
    FROM _compiled_calls c JOIN measured o
      ON o.timeline_id = c.timeline_id AND o.category = 'cpu_op' AND o.stream = c.thread
     AND o.ts_ns >= c.ts_ns AND o.end_ns <= c.end_ns
)
SELECT timeline_id, call_seq, op_seq, name, op_name, ts_ns, end_ns, dur_ns,
       row_number() OVER (PARTITION BY timeline_id, call_seq, op_name
                          ORDER BY ts_ns, op_seq) AS occurrence,
       count(*) OVER (PARTITION BY timeline_id, call_seq, op_name) AS same_name
FROM ops WHERE prev_end IS NULL OR ts_ns >= prev_end;

-- _output_timelines: the output-code timelines, with what identifies their graph.
--   graph_key: the FX-graph cache key a TORCH_TRACE log gave it (NULL elsewhere);
--   rank: the rank its log states; folder: the folder of its file.
CREATE OR REPLACE VIEW _output_timelines AS
SELECT t.timeline_id, json_extract_string(t.attrs, '$.aot_id') AS aot_id,
       TRY_CAST(json_extract(t.attrs, '$.rank') AS INTEGER) AS rank,
       json_extract_string(n.attrs, '$.fx_graph_cache_key') AS graph_key,
       s.path, regexp_replace(s.path, '/[^/]*$', '') AS folder
FROM timeline_records t JOIN sources s USING (source_id)
LEFT JOIN timeline_notes n USING (timeline_id)
WHERE t.format = 'inductor_wrapper';

-- _output_nodes: the nodes of output-code timelines with the name a trace gives them.
--   kind: triton | cpp | extern | NULL (not a launch: return, ...); occurrence: 1 for the
--   first node of that profiler_name in the timeline, 2 for the next, ...; partition: the
--   graph partition it runs in (NULL: in call itself).
CREATE OR REPLACE VIEW _output_nodes AS
WITH n AS (
    SELECT timeline_id, step, node, kernel, device,
           json_extract_string(attrs, '$.partition') AS partition,
           CASE WHEN kernel LIKE 'triton!_%' ESCAPE '!' THEN 'triton'
                WHEN node_class = 'cpp' OR kernel LIKE 'cpp!_%' ESCAPE '!' THEN 'cpp'
                WHEN kernel LIKE 'extern!_kernels.%' ESCAPE '!' OR kernel LIKE 'torch.ops.%'
                THEN 'extern' END AS kind,
           CASE WHEN kernel LIKE 'triton!_%' ESCAPE '!' OR node_class = 'cpp'
                  OR kernel LIKE 'cpp!_%' ESCAPE '!' THEN kernel
                WHEN kernel LIKE 'extern!_kernels.%' ESCAPE '!'
                THEN 'aten::' || regexp_extract(kernel, '[^.]+$')
                WHEN kernel LIKE 'torch.ops.%'
                THEN split_part(kernel, '.', 3) || '::' || split_part(kernel, '.', 4)
           END AS profiler_name
    FROM nodes
    WHERE timeline_id IN (SELECT timeline_id FROM _output_timelines)
)
SELECT *, count(*) OVER (PARTITION BY timeline_id, profiler_name) AS same_name,
       row_number() OVER (PARTITION BY timeline_id, profiler_name ORDER BY step) AS occurrence
FROM n;

-- _output_graphs: per output-code timeline, the sequences a call is matched on and its
-- graph_class: copies of one graph (same AOT id, same launches in order) share it.
--   cpu: the graph runs on the CPU (its nodes' device), matched through CPU ops.
CREATE OR REPLACE VIEW _output_graphs AS
SELECT o.timeline_id, o.aot_id, o.rank, o.graph_key, o.path, o.folder,
       any_value(n.device) FILTER (WHERE n.device IS NOT NULL) AS device,
       COALESCE(bool_or(n.device LIKE 'cpu%'), false) AS cpu,
       COALESCE(list(n.profiler_name ORDER BY n.step) FILTER (WHERE n.kind = 'triton'), [])
           AS triton_sig,
       COALESCE(list(n.profiler_name ORDER BY n.step) FILTER (WHERE n.kind IN ('cpp', 'extern')),
                []) AS cpu_sig,
       COALESCE(list(n.profiler_name ORDER BY n.step) FILTER (WHERE n.kind = 'extern'), [])
           AS extern_sig,
       md5(COALESCE(o.aot_id, '') || '|' || CAST(COALESCE(
           list(n.kernel ORDER BY n.step) FILTER (WHERE n.kind IS NOT NULL), []) AS VARCHAR))
           AS graph_class
FROM _output_timelines o JOIN _output_nodes n USING (timeline_id)
GROUP BY o.timeline_id, o.aot_id, o.rank, o.graph_key, o.path, o.folder;

-- _call_candidates: for each compiled call, the output-code timelines that may have run
-- it, after the narrowing above, grouped into graph classes.
--   member_rank 1 is the class's representative; copies: members of its class;
--   by_key: the class holds a timeline named by the call's cache key.
CREATE OR REPLACE VIEW _call_candidates AS
WITH gpu AS (
    SELECT timeline_id, call_seq, any_value(device) AS device,
           list(kernel ORDER BY launch_ts_ns, ts_ns, seq) AS sig
    FROM _call_launches WHERE kernel LIKE 'triton!_%' ESCAPE '!'
    GROUP BY timeline_id, call_seq
), cpu_names AS (
    SELECT DISTINCT n.profiler_name FROM _output_nodes n JOIN _output_graphs g USING (timeline_id)
    WHERE g.cpu AND n.kind IN ('cpp', 'extern')
), cpu AS (
    SELECT o.timeline_id, o.call_seq, list(o.op_name ORDER BY o.ts_ns, o.op_seq) AS sig,
           bool_or(o.name LIKE 'graph!_%' ESCAPE '!') AS has_cpp
    FROM _call_cpu_ops o WHERE o.op_name IN (SELECT profiler_name FROM cpu_names)
    GROUP BY o.timeline_id, o.call_seq
), m AS (
    SELECT c.timeline_id, c.call_seq, g.timeline_id AS graph_timeline_id, g.graph_class,
           COALESCE(g.graph_key = k.graph_key, false) AS key_match
    FROM gpu c
    JOIN _output_graphs g
      ON NOT g.cpu AND len(g.triton_sig) > 0 AND g.triton_sig = c.sig
     AND (g.device IS NULL OR c.device IS NULL OR g.device = c.device)
    JOIN _compiled_calls k ON k.timeline_id = c.timeline_id AND k.call_seq = c.call_seq
    UNION ALL
    SELECT c.timeline_id, c.call_seq, g.timeline_id, g.graph_class,
           COALESCE(g.graph_key = k.graph_key, false)
    FROM cpu c
    JOIN _output_graphs g
      ON g.cpu AND (len(g.cpu_sig) > 0 AND g.cpu_sig = c.sig
                    OR NOT c.has_cpp AND len(g.extern_sig) > 0 AND g.extern_sig = c.sig)
    JOIN _compiled_calls k ON k.timeline_id = c.timeline_id AND k.call_seq = c.call_seq
    WHERE NOT EXISTS (SELECT 1 FROM gpu WHERE gpu.timeline_id = c.timeline_id
                                          AND gpu.call_seq = c.call_seq)
), placed AS (
    SELECT m.*, starts_with(gp.path, regexp_replace(tp.path, '/[^/]*$', '') || '/') AS near,
           COALESCE(gp.rank = TRY_CAST(json_extract(tt.attrs, '$.rank') AS INTEGER), false)
               AS same_rank
    FROM m
    JOIN _output_graphs gp ON gp.timeline_id = m.graph_timeline_id
    JOIN timeline_records tt ON tt.timeline_id = m.timeline_id
    JOIN sources tp ON tp.source_id = tt.source_id
), cls AS (
    SELECT timeline_id, call_seq, graph_class, bool_or(key_match) AS by_key,
           bool_or(near) AS near, bool_or(same_rank) AS same_rank
    FROM placed GROUP BY ALL
), f1 AS (
    SELECT * FROM cls
    QUALIFY by_key OR NOT bool_or(by_key) OVER (PARTITION BY timeline_id, call_seq)
), f2 AS (
    SELECT * FROM f1
    QUALIFY near OR NOT bool_or(near) OVER (PARTITION BY timeline_id, call_seq)
), f3 AS (
    SELECT * FROM f2
    QUALIFY same_rank OR NOT bool_or(same_rank) OVER (PARTITION BY timeline_id, call_seq)
)
SELECT p.timeline_id, p.call_seq, p.graph_timeline_id, p.graph_class, f3.by_key,
       row_number() OVER (PARTITION BY p.timeline_id, p.call_seq, p.graph_class
                          ORDER BY p.near DESC, p.same_rank DESC, p.key_match DESC,
                                   p.graph_timeline_id) AS member_rank,
       count(*) OVER (PARTITION BY p.timeline_id, p.call_seq, p.graph_class) AS copies
FROM placed p JOIN f3 USING (timeline_id, call_seq, graph_class);

-- call_graphs: each compiled call and the graph(s) it ran: one row per candidate graph,
-- through its representative output-code timeline (see above).
--   candidates: how many different graphs remain (1: the call is attributed; k > 1:
--   ambiguous, each of them gets 1/k of it); class_rank: this one's place (1..k) by
--   timeline id; copies: timelines of this graph (copies included) that matched;
--   match: graph_key (named by its cache key) | kernel_sequence | ambiguous;
--   weight: 1 / candidates; mode, what the call did on the GPU:
--     cuda_graph_capture: it captured a CUDA graph (a cudaStreamBeginCapture on its thread
--       inside it: the launches under capture run nothing) and, as CUDA graph trees do,
--       replayed it once to make its first outputs (graph_replays.after_capture);
--     cuda_graph_replay: a CUDA graph replayed the graph's kernels (one cudaGraphLaunch per
--       partition);
--     cuda_graph_warmup: each kernel launched on its own, by a graph that this trace also
--       captures or replays (CUDA graph trees' warm-up, or their eager fallback);
--     eager: each kernel launched on its own (default mode; or a warm-up whose capture and
--       replays the trace does not hold);
--     no_gpu_work: nothing it launched ran on the GPU (a CPU graph).
CREATE OR REPLACE VIEW call_graphs AS
WITH reps AS (
    SELECT *, count(*) OVER (PARTITION BY timeline_id, call_seq) AS candidates,
           row_number() OVER (PARTITION BY timeline_id, call_seq ORDER BY graph_timeline_id)
               AS class_rank
    FROM _call_candidates WHERE member_rank = 1
), launched AS (
    SELECT timeline_id, call_seq, bool_or(graph_launch) AS replayed
    FROM _call_launches GROUP BY ALL
), captures AS (
    SELECT DISTINCT c.timeline_id, c.call_seq
    FROM _compiled_calls c JOIN measured m
      ON m.timeline_id = c.timeline_id AND m.category = 'runtime' AND m.stream = c.thread
     AND m.ts_ns >= c.ts_ns AND m.ts_ns < c.end_ns
    WHERE m.name LIKE '%StreamBeginCapture%'
), modes AS (
    SELECT r.*, CASE WHEN k.call_seq IS NOT NULL THEN 'cuda_graph_capture'
                     WHEN l.replayed THEN 'cuda_graph_replay'
                     WHEN l.replayed IS NOT NULL THEN 'eager' ELSE 'no_gpu_work' END AS base
    FROM reps r
    LEFT JOIN launched l USING (timeline_id, call_seq)
    LEFT JOIN captures k USING (timeline_id, call_seq)
)
SELECT r.timeline_id, r.call_seq, c.graph_key, r.graph_timeline_id, r.candidates,
       r.class_rank, r.copies,
       CASE WHEN r.by_key THEN 'graph_key' WHEN r.candidates > 1 THEN 'ambiguous'
            ELSE 'kernel_sequence' END AS match,
       1.0 / r.candidates AS weight, g.cpu,
       CASE WHEN r.base = 'eager'
             AND bool_or(r.base IN ('cuda_graph_capture', 'cuda_graph_replay'))
                 OVER (PARTITION BY r.timeline_id, r.graph_timeline_id)
            THEN 'cuda_graph_warmup' ELSE r.base END AS mode
FROM modes r
JOIN _compiled_calls c ON c.timeline_id = r.timeline_id AND c.call_seq = r.call_seq
JOIN _output_graphs g ON g.timeline_id = r.graph_timeline_id;

-- graph_copies: per trace, the output-code timelines recognised as copies of a graph
-- that is attributed through another timeline (copy_of), e.g. a log's copy of an
-- output_code.py: they show its times, never counted twice.
CREATE OR REPLACE VIEW graph_copies AS
SELECT DISTINCT c.timeline_id AS measured_timeline_id, c.graph_timeline_id AS timeline_id,
       r.graph_timeline_id AS copy_of
FROM _call_candidates c
JOIN _call_candidates r
  ON r.timeline_id = c.timeline_id AND r.call_seq = c.call_seq
 AND r.graph_class = c.graph_class AND r.member_rank = 1
WHERE c.member_rank > 1;

-- _extern_ops: the CPU ops of each matched GPU call that stand for extern nodes.
CREATE OR REPLACE VIEW _extern_ops AS
WITH ops AS (
    SELECT c.timeline_id, c.call_seq, o.seq AS op_seq, o.name, o.ts_ns, o.end_ns,
           count(*) OVER (PARTITION BY c.timeline_id, c.call_seq, o.name) AS same_name,
           row_number() OVER (PARTITION BY c.timeline_id, c.call_seq, o.name
                              ORDER BY o.ts_ns, o.seq) AS occurrence
    FROM _compiled_calls c JOIN measured o
      ON o.timeline_id = c.timeline_id AND o.category = 'cpu_op' AND o.stream = c.thread
     AND o.ts_ns >= c.ts_ns AND o.end_ns <= c.end_ns
    WHERE o.name IN (SELECT profiler_name FROM _output_nodes WHERE kind = 'extern')
)
SELECT ops.*, g.graph_timeline_id, g.candidates, g.class_rank, n.step, n.node,
       CASE WHEN ops.same_name = n.same_name THEN 1.0 ELSE 0.5 END AS confidence
FROM ops
JOIN call_graphs g ON g.timeline_id = ops.timeline_id AND g.call_seq = ops.call_seq
                  AND NOT g.cpu
JOIN _output_nodes n
  ON n.timeline_id = g.graph_timeline_id AND n.kind = 'extern'
 AND n.profiler_name = ops.name AND n.occurrence = ops.occurrence;

-- _triton_attachments: Triton kernels of matched GPU calls, the k-th launch of a kernel
-- (in the order they ran) to the k-th node of that kernel: method triton_name_order.
CREATE OR REPLACE VIEW _triton_attachments AS
WITH t AS (
    SELECT *, row_number() OVER (PARTITION BY timeline_id, call_seq, kernel
                                 ORDER BY launch_ts_ns, ts_ns, seq) AS occurrence
    FROM _call_launches WHERE kernel LIKE 'triton!_%' ESCAPE '!'
)
SELECT t.timeline_id, t.seq, t.call_seq, t.kernel, t.dur_ns, t.correlation, t.graph_launch,
       g.graph_timeline_id, n.step, n.node, n.partition, 'triton_name_order' AS method,
       1.0 AS base_confidence, g.candidates, g.class_rank
FROM t
JOIN call_graphs g ON g.timeline_id = t.timeline_id AND g.call_seq = t.call_seq AND NOT g.cpu
JOIN _output_nodes n
  ON n.timeline_id = g.graph_timeline_id AND n.kind = 'triton' AND n.kernel = t.kernel
 AND n.occurrence = t.occurrence;

-- ===== CUDA-graph replays =====
-- Under CUDA graphs (torch.compile mode="reduce-overhead", cudagraph trees) a compiled
-- call replays a captured graph: one cudaGraphLaunch on the CPU, and on the GPU every
-- kernel of the graph partition it captured, each with the launch's correlation id and no
-- CPU op of its own. Its Triton kernels attach by name and order as in an eager call
-- (_triton_attachments, in the order they ran). The other kernels (cuBLAS, attention,
-- reductions of ATen ops, NCCL collectives) have no CPU op to attach through; they are
-- placed by order: between two consecutive Triton kernels of the replay (a gap) run the
-- kernels of the extern nodes between those two Triton nodes in the output code, in the
-- partition the replay's Triton kernels belong to (all nodes when the code has no
-- partitions), in order. Nodes that never launch GPU work (a collective's wait_tensor: on
-- the GPU a stream dependency, no kernel) are left out of the gap and show no_gpu_work.
-- The gap's kernels are cut into runs, one per op call (a kernel that finishes a split-K
-- product, its name holding splitKreduce or split_k, continues the run before it), and runs
-- and nodes fall into three classes: collectives (an NCCL/RCCL kernel; a _c10d_functional
-- op), GEMMs (cuBLAS, cutlass, nvjet kernels, not attention; aten::mm, addmm, bmm, baddbmm,
-- _scaled_mm, _int_mm) and the rest:
--   * one extern node in the gap: every kernel of the gap is its own;
--   * as many runs as nodes, and as many of each class: the k-th run of a class to the
--     k-th node of that class (the order of one class holds where kernels of different
--     streams swapped places);
--   * as many runs as nodes, not of the same classes: the k-th run to the k-th node
--     (confidence 0.5);
--   * else, when every class has as many runs as nodes or a single node (or neither runs
--     nor nodes): runs to the nodes of their class in order, all of them to a class's single
--     node;
--   * else the gap's kernels stay unattached (unattached_kernels says why).
-- method graph_replay_order. A replay with no Triton kernel attached cannot be placed.

-- _is_gemm_kernel(name), _is_matmul_op(profiler_name), _is_comm_op(profiler_name),
-- _no_gpu_op(profiler_name): the kernel and op families of the rules.
CREATE OR REPLACE MACRO _is_gemm_kernel(k) AS
    regexp_matches(k, '(?i)gemm|xmma|nvjet|cutlass|cublas')
    AND NOT regexp_matches(k, '(?i)fmha|flash|attention|sdpa|softmax');
CREATE OR REPLACE MACRO _is_matmul_op(p) AS
    regexp_matches(p, '^aten::(mm|addmm|bmm|baddbmm|_scaled_mm|_int_mm|_addmm_activation)$');
CREATE OR REPLACE MACRO _no_gpu_op(p) AS
    regexp_matches(p, '^_c10d_functional(_autograd)?::wait_tensor$');
CREATE OR REPLACE MACRO _is_comm_op(p) AS
    regexp_matches(p, '^_c10d_functional(_autograd)?::') AND NOT _no_gpu_op(p);

-- kernel_attachments: every measured event of a compiled call attached to its node.
--   timeline_id/seq: the measured event (a GPU event; for CPU graphs the CPU op);
--   graph_timeline_id/step/node: the output-code node (of the representative);
--   method: triton_name_order | extern_cpu_op | cpu_op | graph_replay_order (a kernel of a
--   CUDA-graph replay, placed by order: see above); confidence: as above, divided by
--   candidates; weight: 1 / candidates; share_ns: the part of dur_ns attributed here
--   (the whole of it unless the call is ambiguous; shares of one event sum to dur_ns).
CREATE OR REPLACE VIEW kernel_attachments AS
WITH ta AS MATERIALIZED (SELECT * FROM _triton_attachments),
-- the replays' non-Triton kernels, placed by order (see "CUDA-graph replays" above): each
-- with the Triton nodes around it (prev_step / next_step: NULL before the first / after the
-- last) and the partition of the replay (of its attached Triton kernels)
rk AS (
    SELECT timeline_id, call_seq, correlation, seq, kernel, category, ts_ns, dur_ns,
           row_number() OVER (PARTITION BY timeline_id, call_seq, correlation
                              ORDER BY ts_ns, seq) AS pos
    FROM _call_launches WHERE graph_launch
), anchors AS (
    SELECT rk.timeline_id, rk.call_seq, rk.correlation, rk.pos, ta.graph_timeline_id,
           ta.step, ta.partition, ta.candidates, ta.class_rank
    FROM rk JOIN ta USING (timeline_id, seq)
), replays AS (
    SELECT timeline_id, call_seq, correlation, graph_timeline_id,
           any_value(partition) AS partition, any_value(candidates) AS candidates,
           any_value(class_rank) AS class_rank
    FROM anchors GROUP BY ALL
), k AS (
    SELECT rk.*, r.graph_timeline_id, r.partition, r.candidates, r.class_rank
    FROM rk JOIN replays r USING (timeline_id, call_seq, correlation)
    WHERE rk.kernel NOT LIKE 'triton!_%' ESCAPE '!'
), prev AS (
    SELECT k.timeline_id, k.seq, k.graph_timeline_id, a.step AS prev_step
    FROM k ASOF LEFT JOIN anchors a
      ON a.timeline_id = k.timeline_id AND a.call_seq = k.call_seq
     AND a.correlation = k.correlation AND a.graph_timeline_id = k.graph_timeline_id
     AND k.pos >= a.pos
), nxt AS (
    SELECT k.timeline_id, k.seq, k.graph_timeline_id, a.step AS next_step
    FROM k ASOF LEFT JOIN anchors a
      ON a.timeline_id = k.timeline_id AND a.call_seq = k.call_seq
     AND a.correlation = k.correlation AND a.graph_timeline_id = k.graph_timeline_id
     AND k.pos <= a.pos
),
rg AS MATERIALIZED (
    SELECT k.*, p.prev_step, n.next_step
    FROM k JOIN prev p USING (timeline_id, seq, graph_timeline_id)
    JOIN nxt n USING (timeline_id, seq, graph_timeline_id)
), g AS (
    SELECT *, (NOT regexp_matches(kernel, '(?i)splitkreduce|split_k')) AS starts_run,
           CASE WHEN category = 'comm' THEN 'comm' WHEN _is_gemm_kernel(kernel) THEN 'gemm'
                ELSE 'other' END AS cls
    FROM rg
), runs AS (
    SELECT *, sum(CASE WHEN starts_run THEN 1 ELSE 0 END) OVER w AS run_idx
    FROM g
    WINDOW w AS (PARTITION BY timeline_id, call_seq, correlation, graph_timeline_id,
                              prev_step ORDER BY pos ROWS UNBOUNDED PRECEDING)
), runs1 AS (
    -- a gap opening with a continuation: its first kernel starts the first run anyway
    SELECT * REPLACE (greatest(run_idx, 1) AS run_idx) FROM runs
), run_heads AS (
    SELECT timeline_id, call_seq, correlation, graph_timeline_id, prev_step, run_idx,
           arg_min(cls, pos) AS cls
    FROM runs1 GROUP BY ALL
), run_idx AS (
    SELECT *, row_number() OVER (
               PARTITION BY timeline_id, call_seq, correlation, graph_timeline_id, prev_step,
               cls ORDER BY run_idx) AS cls_idx
    FROM run_heads
), gaps AS (
    SELECT DISTINCT timeline_id, call_seq, correlation, graph_timeline_id, prev_step,
           next_step, partition
    FROM rg
), parted AS (
    SELECT timeline_id, bool_or(partition IS NOT NULL) AS parted
    FROM _output_nodes GROUP BY timeline_id
), gap_nodes AS (
    SELECT *, row_number() OVER (
               PARTITION BY timeline_id, call_seq, correlation, graph_timeline_id, prev_step
               ORDER BY step) AS node_idx,
           row_number() OVER (
               PARTITION BY timeline_id, call_seq, correlation, graph_timeline_id, prev_step,
               cls ORDER BY step) AS cls_idx
    FROM (SELECT gp.timeline_id, gp.call_seq, gp.correlation, gp.graph_timeline_id,
                 gp.prev_step, n.step, n.node,
                 CASE WHEN _is_comm_op(n.profiler_name) THEN 'comm'
                      WHEN _is_matmul_op(n.profiler_name) THEN 'gemm' ELSE 'other' END AS cls
          FROM gaps gp JOIN parted pt ON pt.timeline_id = gp.graph_timeline_id
          JOIN _output_nodes n
            ON n.timeline_id = gp.graph_timeline_id AND n.kind = 'extern'
           AND NOT _no_gpu_op(n.profiler_name)
           AND n.step > COALESCE(gp.prev_step, -1)
           AND n.step < COALESCE(gp.next_step, 9223372036854775807)
           AND (NOT pt.parted OR n.partition IS NOT DISTINCT FROM gp.partition))
), rc AS (
    SELECT timeline_id, call_seq, correlation, graph_timeline_id, prev_step,
           count(*) AS n_runs, count(*) FILTER (WHERE cls = 'comm') AS comm_runs,
           count(*) FILTER (WHERE cls = 'gemm') AS gemm_runs,
           count(*) FILTER (WHERE cls = 'other') AS other_runs
    FROM run_idx GROUP BY ALL
), counts AS (
    SELECT n.timeline_id, n.call_seq, n.correlation, n.graph_timeline_id, n.prev_step,
           count(*) AS n_nodes, count(*) FILTER (WHERE n.cls = 'comm') AS comm_nodes,
           count(*) FILTER (WHERE n.cls = 'gemm') AS gemm_nodes,
           count(*) FILTER (WHERE n.cls = 'other') AS other_nodes,
           any_value(rc.n_runs) AS n_runs, any_value(rc.comm_runs) AS comm_runs,
           any_value(rc.gemm_runs) AS gemm_runs, any_value(rc.other_runs) AS other_runs
    FROM gap_nodes n JOIN rc
      ON rc.timeline_id = n.timeline_id AND rc.call_seq = n.call_seq
     AND rc.correlation = n.correlation AND rc.graph_timeline_id = n.graph_timeline_id
     AND rc.prev_step IS NOT DISTINCT FROM n.prev_step
    GROUP BY ALL
), rules AS (
    -- rule: 'one' | 'by_class' | 'by_order' (0.5) | 'to_class' (see above) | NULL
    SELECT *,
           CASE WHEN n_nodes = 1 THEN 'one'
                WHEN n_runs = n_nodes AND comm_runs = comm_nodes AND gemm_runs = gemm_nodes
                THEN 'by_class'
                WHEN n_runs = n_nodes THEN 'by_order'
                WHEN (comm_runs = comm_nodes OR comm_nodes = 1)
                 AND (gemm_runs = gemm_nodes OR gemm_nodes = 1)
                 AND (other_runs = other_nodes OR other_nodes = 1)
                THEN 'to_class' END AS rule
    FROM counts
), placed AS (
    SELECT r.timeline_id, r.call_seq, r.correlation, r.graph_timeline_id, r.prev_step,
           r.run_idx, n.step, n.node,
           CASE WHEN c.rule = 'by_order' THEN 0.5 ELSE 1.0 END AS base_confidence
    FROM run_idx r
    JOIN rules c
      ON c.timeline_id = r.timeline_id AND c.call_seq = r.call_seq
     AND c.correlation = r.correlation AND c.graph_timeline_id = r.graph_timeline_id
     AND c.prev_step IS NOT DISTINCT FROM r.prev_step
    JOIN gap_nodes n
      ON n.timeline_id = r.timeline_id AND n.call_seq = r.call_seq
     AND n.correlation = r.correlation AND n.graph_timeline_id = r.graph_timeline_id
     AND n.prev_step IS NOT DISTINCT FROM r.prev_step
     AND (c.rule = 'one'
          OR c.rule = 'by_class' AND n.cls = r.cls AND n.cls_idx = r.cls_idx
          OR c.rule = 'by_order' AND n.node_idx = r.run_idx
          OR c.rule = 'to_class' AND n.cls = r.cls
             AND (n.cls_idx = r.cls_idx
                  OR CASE r.cls WHEN 'comm' THEN c.comm_nodes WHEN 'gemm' THEN c.gemm_nodes
                                ELSE c.other_nodes END = 1))
),
ra AS (
    SELECT k.timeline_id, k.seq, k.call_seq, k.kernel, k.dur_ns, k.correlation,
           k.graph_timeline_id, p.step, p.node, p.base_confidence, k.candidates, k.class_rank
    FROM runs1 k JOIN placed p
      ON p.timeline_id = k.timeline_id AND p.call_seq = k.call_seq
     AND p.correlation = k.correlation AND p.graph_timeline_id = k.graph_timeline_id
     AND p.prev_step IS NOT DISTINCT FROM k.prev_step AND p.run_idx = k.run_idx
), a AS (
    SELECT timeline_id, seq, call_seq, kernel, dur_ns, graph_timeline_id, step, node, method,
           base_confidence, candidates, class_rank
    FROM ta
    UNION ALL
    SELECT timeline_id, seq, call_seq, kernel, dur_ns, graph_timeline_id, step, node,
           'graph_replay_order', base_confidence, candidates, class_rank
    FROM ra
    UNION ALL
    SELECT l.timeline_id, l.seq, l.call_seq, l.kernel, l.dur_ns, e.graph_timeline_id, e.step,
           e.node, 'extern_cpu_op', e.confidence, e.candidates, e.class_rank
    FROM _extern_ops e JOIN _call_launches l
      ON l.timeline_id = e.timeline_id AND l.call_seq = e.call_seq
     AND l.launch_ts_ns >= e.ts_ns AND l.launch_ts_ns < e.end_ns
    WHERE l.kernel NOT LIKE 'triton!_%' ESCAPE '!'
    UNION ALL
    SELECT o.timeline_id, o.op_seq, o.call_seq, o.name, o.dur_ns, g.graph_timeline_id, n.step,
           n.node, 'cpu_op', CASE WHEN o.same_name = n.same_name THEN 1.0 ELSE 0.5 END,
           g.candidates, g.class_rank
    FROM _call_cpu_ops o
    JOIN call_graphs g ON g.timeline_id = o.timeline_id AND g.call_seq = o.call_seq AND g.cpu
    JOIN _output_nodes n
      ON n.timeline_id = g.graph_timeline_id AND n.kind IN ('cpp', 'extern')
     AND n.profiler_name = o.op_name AND n.occurrence = o.occurrence
)
SELECT timeline_id, seq, call_seq, kernel, dur_ns, graph_timeline_id, step, node, method,
       base_confidence / candidates AS confidence, candidates, 1.0 / candidates AS weight,
       CAST(dur_ns // candidates
            + CASE WHEN class_rank <= dur_ns % candidates THEN 1 ELSE 0 END AS BIGINT)
           AS share_ns
FROM a;

-- _replay_idle_nodes: per compiled call that replayed a CUDA graph, the nodes of the
-- replayed partition that launch no GPU work (a collective's wait_tensor: in the graph a
-- stream dependency, no kernel): they ran, with nothing to measure (no_gpu_work).
CREATE OR REPLACE VIEW _replay_idle_nodes AS
SELECT DISTINCT t.timeline_id, t.call_seq, t.graph_timeline_id, n.step, n.node, t.candidates
FROM _triton_attachments t
JOIN _output_nodes n
  ON n.timeline_id = t.graph_timeline_id AND n.kind = 'extern' AND _no_gpu_op(n.profiler_name)
 AND n.partition IS NOT DISTINCT FROM t.partition
WHERE t.graph_launch;

-- output_node_times: per output-code node and trace, its measured time.
--   invocations: calls of the graph in which the node was found (an ambiguous call
--   counts for each of its candidates); n_gpu_events: measured events attached (GPU
--   events; CPU ops for CPU graphs); total_ns: their attributed shares (share_ns);
--   mean_ns = total_ns / invocations; attach_method: triton_name_order | extern_cpu_op
--   | cpu_op | no_gpu_work (its CPU op ran and launched nothing, e.g. wait_tensor; or, in a
--   CUDA-graph replay, a node that never launches GPU work) |
--   not_a_launch (return) | unattached (no trace call matched this node: see
--   unattached_nodes); confidence: the lowest of its attachments.
--   copy_of: for a copy of a graph attributed through another timeline, that timeline
--   (this row repeats its times); counted: false for such copies, so that the sum of
--   total_ns over counted rows is the time attributed, each measured event once.
CREATE OR REPLACE VIEW output_node_times AS
WITH ka AS MATERIALIZED (
    SELECT * FROM kernel_attachments
), eo AS MATERIALIZED (
    SELECT * FROM _extern_ops
), on_ AS MATERIALIZED (
    SELECT * FROM _output_nodes
), calls AS (
    SELECT graph_timeline_id, step, timeline_id AS measured_timeline_id, call_seq,
           sum(share_ns) AS ns, count(*) AS n_events, any_value(method) AS method,
           min(confidence) AS confidence
    FROM ka GROUP BY ALL
    UNION ALL
    SELECT e.graph_timeline_id, e.step, e.timeline_id, e.call_seq, 0, 0, 'no_gpu_work',
           e.confidence / e.candidates
    FROM eo e
    WHERE NOT EXISTS (SELECT 1 FROM ka a
                      WHERE a.timeline_id = e.timeline_id AND a.call_seq = e.call_seq
                        AND a.graph_timeline_id = e.graph_timeline_id AND a.step = e.step)
    UNION ALL
    SELECT i.graph_timeline_id, i.step, i.timeline_id, i.call_seq, 0, 0, 'no_gpu_work',
           1.0 / i.candidates
    FROM _replay_idle_nodes i
), agg AS (
    SELECT graph_timeline_id, step, measured_timeline_id, count(DISTINCT call_seq) AS invocations,
           CAST(sum(n_events) AS BIGINT) AS n_gpu_events, CAST(sum(ns) AS BIGINT) AS total_ns,
           COALESCE(any_value(method) FILTER (WHERE method <> 'no_gpu_work'), 'no_gpu_work')
               AS method,
           min(confidence) AS confidence
    FROM calls GROUP BY ALL
), own AS (
    SELECT n.timeline_id, n.step, a.graph_timeline_id AS source_timeline_id,
           a.measured_timeline_id, CAST(NULL AS INTEGER) AS copy_of
    FROM on_ n JOIN agg a ON a.graph_timeline_id = n.timeline_id AND a.step = n.step
    UNION ALL
    SELECT n.timeline_id, n.step, c.copy_of, c.measured_timeline_id, c.copy_of
    FROM on_ n JOIN graph_copies c ON c.timeline_id = n.timeline_id
)
SELECT n.timeline_id, n.step, n.node, n.kernel, n.kind, o.measured_timeline_id,
       COALESCE(a.invocations, 0) AS invocations, COALESCE(a.n_gpu_events, 0) AS n_gpu_events,
       COALESCE(a.total_ns, 0) AS total_ns,
       CAST(a.total_ns / a.invocations AS BIGINT) AS mean_ns,
       COALESCE(a.method, CASE WHEN n.kind IS NULL THEN 'not_a_launch' ELSE 'unattached' END)
           AS attach_method,
       a.confidence, o.copy_of, o.copy_of IS NULL AS counted
FROM on_ n
LEFT JOIN own o ON o.timeline_id = n.timeline_id AND o.step = n.step
LEFT JOIN agg a ON a.graph_timeline_id = o.source_timeline_id AND a.step = n.step
               AND a.measured_timeline_id = o.measured_timeline_id;

-- unattached_kernels: measured GPU events no node claims, and why; with the attributed
-- ones (kernel_attachments) they account for every GPU event of a trace exactly once.
--   call_seq NULL: launched outside every compiled call (eager: the optimizer step, the
--   loss, a copy from the host, NCCL outside the graph) or with no launch record;
--   eager: true for those launched outside every compiled call.
CREATE OR REPLACE VIEW unattached_kernels AS
SELECT l.timeline_id, l.seq, l.call_seq, l.kernel, l.category, l.dur_ns, false AS eager,
       CASE WHEN NOT EXISTS (SELECT 1 FROM call_graphs g
                             WHERE g.timeline_id = l.timeline_id AND g.call_seq = l.call_seq)
            THEN 'no output-code timeline launches this call''s Triton kernels in this order'
            WHEN l.kernel LIKE 'triton!_%' ESCAPE '!'
            THEN 'more launches of this Triton kernel than the output code has'
            WHEN l.graph_launch
            THEN 'replayed by a CUDA graph between Triton kernels whose extern nodes its '
                 || 'kernels cannot be told apart for (or no Triton kernel of the replay '
                 || 'is attached)'
            WHEN (SELECT k.cpu_op FROM kernel_launches k WHERE k.timeline_id = l.timeline_id
                    AND k.seq = l.seq) IS NOT NULL
            THEN 'launched inside the call by ' || (SELECT k.cpu_op FROM kernel_launches k
                 WHERE k.timeline_id = l.timeline_id AND k.seq = l.seq) || ', no op of the '
                 || 'output code (around a CUDA-graph replay: the copy of inputs into the '
                 || 'graph''s static buffers)'
            ELSE 'launched outside every extern op of the output code' END AS reason
FROM _call_launches l
WHERE NOT EXISTS (SELECT 1 FROM kernel_attachments a
                  WHERE a.timeline_id = l.timeline_id AND a.seq = l.seq)
UNION ALL
SELECT k.timeline_id, k.seq, NULL, k.kernel, k.category, k.dur_ns, k.runtime IS NOT NULL,
       CASE WHEN k.runtime IS NULL
            THEN 'no launch record in the trace (no runtime call with its correlation id)'
            ELSE 'eager: launched outside every compiled call' END
FROM kernel_launches k
WHERE NOT EXISTS (SELECT 1 FROM _call_launches l
                  WHERE l.timeline_id = k.timeline_id AND l.seq = k.seq);

-- graph_replays: every CUDA-graph replay of a trace (a cudaGraphLaunch whose kernels ran).
--   timeline_id, correlation: the launch; launch_ts_ns, thread: when and where the CPU
--   asked; call_seq: the compiled call it ran in (NULL: outside every compiled call);
--   graph_timeline_id: the output code the call ran (call_graphs' first candidate);
--   partition: the graph partition it replays (of its attached Triton kernels);
--   n_kernels, gpu_ns: its GPU events and their summed durations; gpu_first_ns /
--   gpu_last_ns: their extent; n_attached: of its events, those attached to a node;
--   after_capture: the replay CUDA graph trees run right after capturing the graph, in the
--   call that captured it (call_graphs.mode cuda_graph_capture: the graph's first run), as
--   against the replays of later calls.
CREATE OR REPLACE VIEW graph_replays AS
WITH r AS (
    SELECT timeline_id, correlation, any_value(launch_ts_ns) AS launch_ts_ns,
           any_value(thread) AS thread, count(*) AS n_kernels,
           CAST(sum(dur_ns) AS BIGINT) AS gpu_ns, min(ts_ns) AS gpu_first_ns,
           max(ts_ns + dur_ns) AS gpu_last_ns
    FROM kernel_launches WHERE graph_launch GROUP BY timeline_id, correlation
), c AS (
    SELECT DISTINCT timeline_id, correlation, call_seq FROM _call_launches WHERE graph_launch
), g AS (
    SELECT timeline_id, call_seq, graph_timeline_id, mode FROM call_graphs WHERE class_rank = 1
), a AS (
    SELECT l.timeline_id, l.correlation, count(DISTINCT l.seq) AS n_attached,
           any_value(n.partition) AS partition
    FROM kernel_launches l JOIN kernel_attachments k USING (timeline_id, seq)
    LEFT JOIN _output_nodes n ON n.timeline_id = k.graph_timeline_id AND n.step = k.step
    WHERE l.graph_launch GROUP BY ALL
)
SELECT r.timeline_id, r.correlation, r.launch_ts_ns, r.thread, c.call_seq,
       g.graph_timeline_id, a.partition, r.n_kernels, r.gpu_ns, r.gpu_first_ns,
       r.gpu_last_ns, COALESCE(a.n_attached, 0) AS n_attached,
       COALESCE(g.mode = 'cuda_graph_capture', false) AS after_capture
FROM r LEFT JOIN c USING (timeline_id, correlation)
LEFT JOIN g USING (timeline_id, call_seq)
LEFT JOIN a USING (timeline_id, correlation)
ORDER BY r.timeline_id, r.launch_ts_ns;

-- unattached_nodes: launch nodes of an output-code timeline that a matched call ran
-- without any measured work being attached to them, why.
CREATE OR REPLACE VIEW unattached_nodes AS
SELECT g.timeline_id AS measured_timeline_id, g.call_seq, n.timeline_id, n.step, n.node,
       n.kernel, n.kind,
       CASE WHEN n.kind = 'triton' THEN 'the call launched fewer ' || n.kernel || ' kernels'
            WHEN n.partition IS NOT NULL AND g.mode IN ('cuda_graph_replay', 'cuda_graph_capture')
            THEN 'replayed in a CUDA graph: its kernels could not be told apart from its '
                 || 'neighbours'' (see unattached_kernels)'
            WHEN n.kind = 'cpp' THEN 'no CPU op ' || n.kernel || ' in the call (a CPU trace '
                 || 'shows C++ kernels with TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1)'
            ELSE 'no CPU op ' || n.profiler_name || ' at this position in the call'
       END AS reason
FROM call_graphs g JOIN _output_nodes n ON n.timeline_id = g.graph_timeline_id
WHERE n.kind IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM kernel_attachments a
                  WHERE a.timeline_id = g.timeline_id AND a.call_seq = g.call_seq
                    AND a.graph_timeline_id = n.timeline_id AND a.step = n.step)
  AND NOT EXISTS (SELECT 1 FROM _extern_ops e
                  WHERE e.timeline_id = g.timeline_id AND e.call_seq = g.call_seq
                    AND e.graph_timeline_id = n.timeline_id AND e.step = n.step)
  AND NOT EXISTS (SELECT 1 FROM _replay_idle_nodes i
                  WHERE i.timeline_id = g.timeline_id AND i.call_seq = g.call_seq
                    AND i.graph_timeline_id = n.timeline_id AND i.step = n.step);

-- _ir_wrapper_steps (and ir_node_times, below): scheduler-IR nodes and the output-code
-- node they became, whose measured time they show. The IR timeline and the output code of the same compile are paired
-- as in ir_vs_wrapper_peak (same folder); the IR nodes that launch work (all but
-- MultiOutput and Nop nodes) map in order onto the output code's launches, and the
-- mapping is used only when it agrees everywhere: as many launches on both sides,
-- each extern IR node on an extern launch of the same kernel, each other on a Triton
-- or C++ launch (method 'ir_launch_order'); otherwise attach_method says
-- 'ir_order_mismatch'.
--   attach_method 'no_launch': MultiOutput / Nop nodes, which launch nothing.
CREATE OR REPLACE VIEW _ir_wrapper_steps AS
WITH ir AS (
    SELECT n.timeline_id, n.step, n.node, n.node_class, n.ir_type, n.kernel,
           NOT (n.ir_type = 'MultiOutput' OR n.node_class LIKE 'Nop%') AS launches
    FROM nodes n JOIN timeline_records t USING (timeline_id)
    WHERE t.format = 'inductor_ir'
), ir_l AS (
    SELECT *, row_number() OVER (PARTITION BY timeline_id ORDER BY step) AS k
    FROM ir WHERE launches
), w_l AS (
    SELECT *, row_number() OVER (PARTITION BY timeline_id ORDER BY step) AS k
    FROM _output_nodes WHERE kind IS NOT NULL
), pairs AS (
    SELECT DISTINCT ir_timeline_id, wrapper_timeline_id FROM ir_vs_wrapper_peak
), matched AS (
    SELECT p.ir_timeline_id, p.wrapper_timeline_id, i.step AS ir_step, w.step AS wrapper_step,
           COALESCE(i.node_class LIKE 'ExternKernel%' AND w.kind = 'extern' AND i.kernel = w.kernel
                    OR i.node_class NOT LIKE 'ExternKernel%' AND w.kind IN ('triton', 'cpp'),
                    false) AS agrees
    FROM pairs p
    JOIN ir_l i ON i.timeline_id = p.ir_timeline_id
    FULL JOIN w_l w ON w.timeline_id = p.wrapper_timeline_id AND w.k = i.k
), ok AS (
    SELECT ir_timeline_id, wrapper_timeline_id, bool_and(agrees AND ir_step IS NOT NULL
                                                         AND wrapper_step IS NOT NULL) AS all_agree
    FROM matched WHERE ir_timeline_id IS NOT NULL GROUP BY ALL
)
SELECT ir.timeline_id, ir.step, ir.node, ir.node_class, ir.ir_type, ir.launches,
       m.wrapper_timeline_id, m.wrapper_step, COALESCE(o.all_agree, false) AS all_agree
FROM ir
LEFT JOIN matched m ON m.ir_timeline_id = ir.timeline_id AND m.ir_step = ir.step
LEFT JOIN ok o ON o.ir_timeline_id = m.ir_timeline_id AND o.wrapper_timeline_id = m.wrapper_timeline_id;

-- ir_node_times: the scheduler-IR nodes with the measured times of _ir_wrapper_steps.
CREATE OR REPLACE VIEW ir_node_times AS
SELECT i.timeline_id, i.step, i.node, i.node_class, i.ir_type, i.wrapper_timeline_id,
       i.wrapper_step, t.kernel, t.measured_timeline_id, t.invocations, t.n_gpu_events,
       t.total_ns, t.mean_ns, t.confidence,
       CASE WHEN NOT i.launches THEN 'no_launch'
            WHEN NOT i.all_agree THEN 'ir_order_mismatch'
            WHEN t.attach_method IN ('triton_name_order', 'extern_cpu_op', 'cpu_op',
                                     'no_gpu_work')
            THEN 'ir_launch_order+' || t.attach_method
            ELSE t.attach_method END AS attach_method
FROM _ir_wrapper_steps i
LEFT JOIN output_node_times t
  ON t.timeline_id = i.wrapper_timeline_id AND t.step = i.wrapper_step AND i.all_agree;

-- collectives_measured: the scheduler IR's collectives (core view `collectives`) with
-- the measured time of the node that issued them, where attached (see ir_node_times).
--   total_ns / mean_ns / invocations: of the issuing node's GPU work (the NCCL kernel).
CREATE OR REPLACE VIEW collectives_measured AS
SELECT c.*, t.measured_timeline_id, t.invocations, t.total_ns, t.mean_ns, t.attach_method
FROM collectives c
LEFT JOIN ir_node_times t ON t.timeline_id = c.timeline_id AND t.node = c.node;

-- kernel_times: per output-code kernel (the wrapper's `kernels` view), its measured
-- time summed over its nodes: launches = nodes x invocations attached. copy_of / counted
-- as in output_node_times (a copy's rows repeat its graph's times).
CREATE OR REPLACE VIEW kernel_times AS
SELECT timeline_id, kernel, any_value(kind) AS kind, measured_timeline_id,
       count(*) AS nodes, CAST(sum(invocations) AS BIGINT) AS launches,
       CAST(sum(n_gpu_events) AS BIGINT) AS n_gpu_events,
       CAST(sum(total_ns) AS BIGINT) AS total_ns,
       CAST(sum(total_ns) / nullif(sum(invocations), 0) AS BIGINT) AS mean_ns_per_launch,
       any_value(copy_of) AS copy_of, bool_and(counted) AS counted
FROM output_node_times
WHERE kind IS NOT NULL AND measured_timeline_id IS NOT NULL
GROUP BY timeline_id, kernel, measured_timeline_id;

-- node_times: measured time beside every node that has one, output code and scheduler
-- IR alike (what the TUI shows next to a step). Only nodes a trace was attached to; the
-- others, and why, are in output_node_times / ir_node_times.
--   timeline_id, step, node, kernel: the node; kind: triton | cpp | extern | NULL for
--   output code, 'ir' for scheduler-IR nodes; measured_timeline_id: the trace;
--   invocations, n_gpu_events, total_ns, mean_ns (per invocation); attach_method and
--   confidence as in output_node_times / ir_node_times (confidence < 1 / candidates
--   marks an ambiguous call's share); copy_of: the timeline a copy's times come from;
--   counted: true on exactly one row per attributed time (output-code rows of the
--   timeline a graph is attributed through): sum(total_ns) WHERE counted, with
--   unattached_kernels, adds up to the trace's measured total. IR and copy rows repeat
--   times counted elsewhere.
CREATE OR REPLACE VIEW node_times AS
WITH o AS MATERIALIZED (SELECT * FROM output_node_times WHERE measured_timeline_id IS NOT NULL)
SELECT timeline_id, step, node, kernel, kind, measured_timeline_id, invocations,
       n_gpu_events, total_ns, mean_ns, attach_method, confidence, copy_of, counted
FROM o
UNION ALL
SELECT i.timeline_id, i.step, i.node, t.kernel, 'ir', t.measured_timeline_id, t.invocations,
       t.n_gpu_events, t.total_ns, t.mean_ns,
       CASE WHEN t.attach_method IN ('triton_name_order', 'extern_cpu_op', 'cpu_op',
                                     'no_gpu_work')
            THEN 'ir_launch_order+' || t.attach_method ELSE t.attach_method END,
       t.confidence, NULL, false
FROM _ir_wrapper_steps i
JOIN o t ON t.timeline_id = i.wrapper_timeline_id AND t.step = i.wrapper_step
WHERE i.launches AND i.all_agree;
