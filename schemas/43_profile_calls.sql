-- Attaching measured work to the nodes of the output code: which graph each compiled
-- call of a profiler trace ran (call_graphs, graph_copies).
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

-- The caches. Every view of a trace's attribution reads the matching above, whose
-- derivation is hundreds of views deep (DuckDB binds and optimises all of it at each
-- query: seconds of CPU for a few rows). The store keeps it in tables, filled at ingest
-- (store/caches.py ATTACHMENT_CACHES, inside the ingest's transaction, whenever an ingest
-- adds an output-code timeline or a trace with compiled calls, in whatever order they
-- come: a trace and its output code may be ingested in either order, by different
-- commands; the rows of the traces whose candidates the new timelines can change derived
-- again, each trace's rows being derived from its own events, candidates and their output
-- code alone; rebuilt whole when timelines holding rows change): _cache_output_nodes
-- (_output_nodes_derived),
-- _cache_call_candidates (_call_candidates_derived), _cache_call_graphs
-- (_call_graphs_derived), _cache_extern_ops, _cache_triton_attachments (44:
-- _cache_kernel_attachments); each derivation reads the caches before it. _output_nodes,
-- _call_candidates, call_graphs, _extern_ops, _triton_attachments and kernel_attachments
-- read the caches. Over a shard set read in place (store/shards.py), whose shards are
-- one source each, each cache is a view of its derivation.

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
-- (_output_nodes_derived: computed from the events; _output_nodes: read from _cache_output_nodes.)
CREATE OR REPLACE VIEW _output_nodes_derived AS
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

CREATE VIEW IF NOT EXISTS _cache_output_nodes AS SELECT * FROM _output_nodes_derived;

CREATE OR REPLACE VIEW _output_nodes AS
SELECT * FROM _cache_output_nodes;

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
-- (A call matches only graphs whose Triton kernels, or extern ops / C++ kernels, it holds:
-- which traces new timelines can give new candidates is found by these names,
-- queries_caches.sql traces_to_match; change both together.)
-- (_call_candidates_derived: computed from the events; _call_candidates: read from _cache_call_candidates.)
CREATE OR REPLACE VIEW _call_candidates_derived AS
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

CREATE VIEW IF NOT EXISTS _cache_call_candidates AS SELECT * FROM _call_candidates_derived;

CREATE OR REPLACE VIEW _call_candidates AS
SELECT * FROM _cache_call_candidates;

-- _call_graphs_derived: call_graphs (below), computed from the events (kept in _cache_call_graphs).
CREATE OR REPLACE VIEW _call_graphs_derived AS
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

CREATE VIEW IF NOT EXISTS _cache_call_graphs AS SELECT * FROM _call_graphs_derived;

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
SELECT * FROM _cache_call_graphs;

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
-- (_extern_ops_derived: computed from the events; _extern_ops: read from _cache_extern_ops.)
CREATE OR REPLACE VIEW _extern_ops_derived AS
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

CREATE VIEW IF NOT EXISTS _cache_extern_ops AS SELECT * FROM _extern_ops_derived;

CREATE OR REPLACE VIEW _extern_ops AS
SELECT * FROM _cache_extern_ops;

-- _triton_attachments: Triton kernels of matched GPU calls, the k-th launch of a kernel
-- (in the order they ran) to the k-th node of that kernel: method triton_name_order.
-- (_triton_attachments_derived: computed from the events; _triton_attachments: read from _cache_triton_attachments.)
CREATE OR REPLACE VIEW _triton_attachments_derived AS
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

CREATE VIEW IF NOT EXISTS _cache_triton_attachments AS SELECT * FROM _triton_attachments_derived;

CREATE OR REPLACE VIEW _triton_attachments AS
SELECT * FROM _cache_triton_attachments;
