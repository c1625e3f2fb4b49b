-- Planned versus actual: Inductor's output code (the wrapper's call()) beside what the
-- allocator did when it ran. A frame named `call` in a .py file is a wrapper frame; the
-- innermost one of an allocation's stack names the output-code line that allocated it.

-- _stack_wrapper_frame: per stack, its innermost frame of output code: named `call`, or
-- `partition_N` (a graph partition, which call dispatches), in a .py file.
CREATE OR REPLACE VIEW _stack_wrapper_frame AS
SELECT s.source_id, s.stack_id, arg_min(fr.filename, u.depth) AS filename,
       arg_min(fr.line, u.depth) AS line, arg_min(fr.name, u.depth) AS function
FROM stacks s,
     LATERAL (SELECT generate_subscripts(s.frame_ids, 1) AS depth,
                     unnest(s.frame_ids) AS frame_id) u
JOIN frames fr ON fr.source_id = s.source_id AND fr.frame_id = u.frame_id
WHERE (fr.name = 'call' OR regexp_matches(fr.name, '^partition_[0-9]+$'))
  AND ends_with(fr.filename, '.py')
GROUP BY s.source_id, s.stack_id;

-- _stack_has_optimizer: stacks with a frame in torch/optim (optimizer state, steps).
CREATE OR REPLACE VIEW _stack_has_optimizer AS
SELECT DISTINCT s.source_id, s.stack_id
FROM stacks s,
     LATERAL (SELECT unnest(s.frame_ids) AS frame_id) u
JOIN frames fr ON fr.source_id = s.source_id AND fr.frame_id = u.frame_id
WHERE regexp_matches(fr.filename, '(^|/)torch/optim/');

-- _wrapper_line_buffers: per wrapper timeline, the buffers each output-code line
-- allocates: a line's own buffer with bytes (empty_strided_*, an extern op's output), or,
-- for an op returning a tuple (`buf6 = torch.ops...(...)`, then `buf7 = buf6[0]`), the
-- tuple's elements in order (alloc_line = the op's line).
CREATE OR REPLACE VIEW _wrapper_line_buffers AS
WITH b AS (
    SELECT b.* FROM buffers b JOIN timeline_records t USING (timeline_id)
    WHERE t.format = 'inductor_wrapper' AND NOT b.is_input AND b.line IS NOT NULL
)
SELECT o.timeline_id AS wrapper_timeline_id, COALESCE(t.line, o.line) AS alloc_line,
       o.buffer, o.bytes, o.alloc_step, o.last_step, o.line AS buffer_line,
       row_number() OVER (PARTITION BY o.timeline_id, COALESCE(t.line, o.line)
                          ORDER BY o.line, o.buffer) AS ord
FROM b o LEFT JOIN b t
  ON t.timeline_id = o.timeline_id AND t.layout = 'tuple' AND o.layout = 'extern_output'
 AND t.alloc_step = o.alloc_step AND t.producer = o.producer AND t.line < o.line
WHERE o.bytes > 0 OR o.bytes IS NULL;  -- a symbolic size (dynamic shapes) maps by order

-- wrapper_files: which output code each wrapper file of the snapshots' frames is.
--   A file maps to the wrapper timeline whose allocating lines hold the most of the
--   lines the file's allocations came from (by_name: the timeline was ingested from a
--   file of the same name, which wins); a tie leaves it unmapped (wrapper_timeline_id
--   NULL). hits / lines: how many of the file's allocation lines that timeline allocates at.
--   A graph's repeats in other artifacts (the same AOT id: its output_code.py, its copy in
--   a torch log and in a TORCH_TRACE log) are one candidate: the same code fitting equally
--   is no tie; the output_code.py stands for them (else the first ingested).
CREATE OR REPLACE VIEW wrapper_files AS
WITH al AS (
    SELECT DISTINCT a.source_id, w.filename, w.line
    FROM allocator_events a JOIN _stack_wrapper_frame w USING (source_id, stack_id)
    WHERE a.action = 'alloc'
), lines AS (
    SELECT source_id, filename, count(*) AS lines FROM al GROUP BY ALL
), score AS (
    SELECT al.source_id, al.filename, l.wrapper_timeline_id,
           count(DISTINCT al.line) AS hits,
           any_value(regexp_extract(s.path, '[^/]*$') = regexp_extract(al.filename, '[^/]*$')) AS by_name,
           COALESCE(any_value(json_extract_string(t.attrs, '$.aot_id')),
                    CAST(l.wrapper_timeline_id AS VARCHAR)) AS graph,
           any_value(ends_with(s.path, '.py')) AS own_file
    FROM al JOIN _wrapper_line_buffers l ON l.alloc_line = al.line
    JOIN timeline_records t ON t.timeline_id = l.wrapper_timeline_id
    JOIN sources s ON s.source_id = t.source_id
    GROUP BY al.source_id, al.filename, l.wrapper_timeline_id
), graphs AS (  -- one row per graph: its output_code.py, else its first timeline
    SELECT * FROM score
    QUALIFY row_number() OVER (PARTITION BY source_id, filename, by_name, hits, graph
                               ORDER BY own_file DESC, wrapper_timeline_id) = 1
), ranked AS (
    SELECT *, rank() OVER (PARTITION BY source_id, filename ORDER BY by_name DESC, hits DESC) AS r,
           count(*) OVER (PARTITION BY source_id, filename, by_name, hits) AS same
    FROM graphs
)
SELECT l.source_id, l.filename, l.lines,
       CASE WHEN r.same = 1 THEN r.wrapper_timeline_id END AS wrapper_timeline_id,
       r.hits, COALESCE(r.by_name, false) AS by_name,
       CASE WHEN r.wrapper_timeline_id IS NULL THEN 'no ingested output code allocates at these lines'
            WHEN r.same > 1 THEN 'several output codes fit equally' END AS unmapped_reason
FROM lines l LEFT JOIN (SELECT * FROM ranked WHERE r = 1) r USING (source_id, filename)
QUALIFY row_number() OVER (PARTITION BY l.source_id, l.filename ORDER BY r.wrapper_timeline_id) = 1;

-- _wrapper_allocs: every alloc of a snapshot timeline with its wrapper frame (if any) and
-- the graph call it belongs to: a call is a run of consecutive allocs (in trace order)
-- from the same wrapper file; call_index numbers the calls of a timeline from 0.
CREATE OR REPLACE VIEW _wrapper_allocs AS
WITH a AS (
    SELECT a.timeline_id, a.source_id, a.event_index, a.size, a.stream, w.filename, w.line,
           lag(w.filename) OVER (PARTITION BY a.timeline_id ORDER BY a.event_index) AS prev
    FROM allocator_events a LEFT JOIN _stack_wrapper_frame w USING (source_id, stack_id)
    WHERE a.action = 'alloc'
), runs AS (
    SELECT *, sum(CASE WHEN filename IS DISTINCT FROM prev THEN 1 ELSE 0 END)
                  OVER (PARTITION BY timeline_id ORDER BY event_index) AS run
    FROM a
)
SELECT r.*, dense_rank() OVER (PARTITION BY r.timeline_id ORDER BY r.run) - 1 AS call_index,
       f.wrapper_timeline_id
FROM runs r JOIN wrapper_files f USING (source_id, filename)
WHERE r.filename IS NOT NULL;

-- graph_calls: each run of a compiled graph's call() in a snapshot timeline.
--   first_event / last_event: its first and last alloc; stream: of its first alloc.
CREATE OR REPLACE VIEW graph_calls AS
SELECT timeline_id, call_index, any_value(source_id) AS source_id, any_value(filename) AS filename,
       any_value(wrapper_timeline_id) AS wrapper_timeline_id,
       min(event_index) AS first_event, max(event_index) AS last_event,
       arg_min(stream, event_index) AS stream, count(*) AS allocations
FROM _wrapper_allocs GROUP BY timeline_id, call_index;

-- _call_alloc_map: each alloc of a call matched to a planned buffer of its line: first by
-- size (the k-th alloc of n bytes at a line is the k-th buffer of n bytes that line
-- allocates), then what is left at the line by order (size_matches false there); an
-- alloc with no buffer left keeps buffer NULL.
CREATE OR REPLACE VIEW _call_alloc_map AS
WITH a AS (
    SELECT w.*, row_number() OVER (PARTITION BY w.timeline_id, w.call_index, w.line, w.size
                                   ORDER BY w.event_index) AS ord
    FROM _wrapper_allocs w
), c AS (
    SELECT g.timeline_id, g.call_index, l.*,
           row_number() OVER (PARTITION BY g.timeline_id, g.call_index, l.alloc_line, l.bytes
                              ORDER BY l.buffer_line, l.buffer) AS ord_size
    FROM graph_calls g JOIN _wrapper_line_buffers l USING (wrapper_timeline_id)
), by_size AS (
    SELECT a.timeline_id, a.call_index, a.event_index, c.buffer
    FROM a JOIN c ON c.timeline_id = a.timeline_id AND c.call_index = a.call_index
     AND c.alloc_line = a.line AND c.bytes = a.size AND c.ord_size = a.ord
), rest_a AS (
    SELECT a.*, row_number() OVER (PARTITION BY a.timeline_id, a.call_index, a.line
                                   ORDER BY a.event_index) AS ord2
    FROM a WHERE NOT EXISTS (SELECT 1 FROM by_size b WHERE b.timeline_id = a.timeline_id
                             AND b.event_index = a.event_index)
), rest_c AS (
    SELECT c.*, row_number() OVER (PARTITION BY c.timeline_id, c.call_index, c.alloc_line
                                   ORDER BY c.buffer_line, c.buffer) AS ord2
    FROM c WHERE NOT EXISTS (SELECT 1 FROM by_size b WHERE b.timeline_id = c.timeline_id
                             AND b.call_index = c.call_index AND b.buffer = c.buffer)
), by_order AS (
    SELECT r.timeline_id, r.call_index, r.event_index, c.buffer
    FROM rest_a r JOIN rest_c c ON c.timeline_id = r.timeline_id AND c.call_index = r.call_index
     AND c.alloc_line = r.line AND c.ord2 = r.ord2
), matched AS (SELECT * FROM by_size UNION ALL SELECT * FROM by_order)
SELECT a.timeline_id, a.call_index, a.event_index, a.line, a.wrapper_timeline_id,
       l.buffer, l.bytes AS planned_bytes, l.alloc_step, l.last_step
FROM a LEFT JOIN matched m USING (timeline_id, call_index, event_index)
LEFT JOIN _wrapper_line_buffers l ON l.wrapper_timeline_id = a.wrapper_timeline_id
     AND l.buffer = m.buffer;

-- planned_vs_actual: per graph call and buffer, what the output code planned beside what
-- the allocator did. One row per planned buffer of the call's wrapper (status 'mapped',
-- or 'not_allocated' when no allocation of the call came from its line) and per
-- allocation of the call that maps to no buffer (status 'unmapped', with why).
--   timeline_id, call_index: the snapshot timeline and graph call (graph_calls);
--   wrapper_timeline_id, graph (the wrapper timeline's name, e.g. 0_forward);
--   buffer, planned_bytes, planned_alloc_step, planned_last_step: the wrapper's plan
--   (buffers view); line: the output-code line that allocates it;
--   alloc_index, address, requested_size, block_size, stream, free_index: the allocator's
--   block (allocator_blocks); lifetime_us: free time - alloc time (NULL: alive after the
--   trace); actual_last_step: the last wrapper step before the line that freed it (NULL:
--   freed outside the call, e.g. an output saved for backward); size_matches:
--   requested_size = planned_bytes; reason: why a row is not mapped.
CREATE OR REPLACE VIEW planned_vs_actual AS
WITH m AS (
    SELECT c.*, b.address, b.requested_size, b.size AS block_size, b.stream, b.free_index,
           b.free_time_us - b.alloc_time_us AS lifetime_us, b.source_id
    FROM _call_alloc_map c JOIN allocator_blocks b
      ON b.timeline_id = c.timeline_id AND b.alloc_index = c.event_index
), freed AS (
    SELECT m.timeline_id, m.event_index, w.line AS free_line
    FROM m JOIN allocator_events f ON f.timeline_id = m.timeline_id
         AND f.action = 'free_completed' AND f.event_index = m.free_index
    JOIN _stack_wrapper_frame w ON w.source_id = f.source_id AND w.stack_id = f.stack_id
    JOIN graph_calls g ON g.timeline_id = m.timeline_id AND g.call_index = m.call_index
         AND w.filename = g.filename
), mapped AS (
    SELECT m.timeline_id, m.call_index, m.wrapper_timeline_id, m.buffer, m.planned_bytes,
           m.alloc_step AS planned_alloc_step, m.last_step AS planned_last_step, m.line,
           m.event_index AS alloc_index, m.address, m.requested_size, m.block_size, m.stream,
           m.free_index, m.lifetime_us,
           (SELECT max(n.step) FROM nodes n WHERE n.timeline_id = m.wrapper_timeline_id
                                              AND n.line < fr.free_line) AS actual_last_step,
           CASE WHEN m.buffer IS NOT NULL THEN 'mapped' ELSE 'unmapped' END AS status,
           CASE WHEN m.wrapper_timeline_id IS NULL THEN 'no ingested output code for its file'
                WHEN m.buffer IS NULL AND NOT EXISTS (
                    SELECT 1 FROM _wrapper_line_buffers l
                    WHERE l.wrapper_timeline_id = m.wrapper_timeline_id AND l.alloc_line = m.line)
                    THEN 'its line allocates no buffer in the output code (a kernel''s own workspace)'
                WHEN m.buffer IS NULL THEN 'no planned buffer left at its line: the op''s own scratch'
           END AS reason
    FROM m LEFT JOIN freed fr USING (timeline_id, event_index)
), planned AS (
    SELECT g.timeline_id, g.call_index, g.wrapper_timeline_id, l.buffer, l.bytes,
           l.alloc_step, l.last_step, l.alloc_line
    FROM graph_calls g JOIN _wrapper_line_buffers l USING (wrapper_timeline_id)
)
SELECT x.*, t.name AS graph, x.requested_size = x.planned_bytes AS size_matches
FROM (
    SELECT * FROM mapped
    UNION ALL
    SELECT p.timeline_id, p.call_index, p.wrapper_timeline_id, p.buffer, p.bytes,
           p.alloc_step, p.last_step, p.alloc_line, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
           NULL, 'not_allocated',
           'no allocation of this call came from its line (a CPU tensor, or not made on the device)'
    FROM planned p
    WHERE NOT EXISTS (SELECT 1 FROM mapped q WHERE q.timeline_id = p.timeline_id
                      AND q.call_index = p.call_index AND q.buffer = p.buffer)
) x LEFT JOIN timeline_records t ON t.timeline_id = x.wrapper_timeline_id;

-- planned_vs_actual_calls: per graph call, the wrapper's planned peak beside the
-- measured allocated peak during the call, and what the measured peak holds.
--   planned_peak_bytes / planned_peak_step: peak_memory of the wrapper timeline (its own
--   buffers, inputs excluded); measured_peak_bytes / measured_peak_event: the maximum of
--   allocator_curve.allocated_bytes from the call's first to its last alloc;
--   planned_bytes_at_measured_step: the wrapper's live bytes (memory_curve) at the step of
--   the buffer whose alloc made the measured peak (NULL if that alloc is unmapped).
--   The blocks live at the measured peak, by who made them (requested bytes; they sum to
--   measured_peak_bytes): planned_live_bytes (this call, mapped to planned buffers),
--   unplanned_call_bytes (this call, no planned buffer: workspaces), other_graph_bytes
--   (made by another compiled graph's call: for a backward, what the forward saved),
--   optimizer_bytes (a frame in torch/optim: optimizer state), before_window_bytes
--   (made before recording began and never seen allocated: parameters and the like),
--   other_bytes (everything else: inputs, eager tensors). Beside them, not in the sum:
--   rounding_bytes = Σ (block size - requested size) of those blocks (the allocator's
--   rounding, which memory_allocated() counts), other_stream_bytes (requested bytes of
--   those blocks on streams other than the call's). mapped_allocations /
--   unmapped_allocations / not_allocated_buffers: counts from planned_vs_actual.
CREATE OR REPLACE VIEW planned_vs_actual_calls AS
WITH peak AS (
    SELECT g.timeline_id, g.call_index,
           max(c.allocated_bytes) AS measured_peak_bytes,
           arg_min(c.event_index, (-c.allocated_bytes, c.event_index)) AS measured_peak_event
    FROM graph_calls g JOIN allocator_curve c ON c.timeline_id = g.timeline_id
     AND c.event_index BETWEEN g.first_event AND g.last_event
    GROUP BY ALL
), live AS (
    SELECT p.timeline_id, p.call_index, b.requested_size, b.size, b.stream, b.origin,
           b.alloc_index, m.buffer, m.event_index IS NOT NULL AS in_call,
           w.filename AS made_by_file, o.stack_id IS NOT NULL AS optim,
           wf.filename IS NOT NULL AS other_graph, g.first_event, g.stream AS call_stream
    FROM peak p JOIN graph_calls g USING (timeline_id, call_index)
    JOIN allocator_blocks b ON b.timeline_id = p.timeline_id
     AND COALESCE(b.alloc_index, -1) <= p.measured_peak_event
     AND (b.free_index IS NULL OR b.free_index > p.measured_peak_event)
    LEFT JOIN _call_alloc_map m ON m.timeline_id = p.timeline_id AND m.call_index = p.call_index
     AND m.event_index = b.alloc_index
    LEFT JOIN _stack_wrapper_frame w ON w.source_id = b.source_id AND w.stack_id = b.stack_id
    LEFT JOIN _stack_has_optimizer o ON o.source_id = b.source_id AND o.stack_id = b.stack_id
    LEFT JOIN (SELECT DISTINCT filename FROM wrapper_files WHERE wrapper_timeline_id IS NOT NULL) wf
      ON wf.filename = w.filename
), classed AS (  -- (joins, not correlated EXISTS: 12.8 -> 1.x s on the OOM fixture)
    SELECT *,
           CASE WHEN alloc_index >= first_event AND in_call
                    THEN (CASE WHEN buffer IS NOT NULL THEN 'planned' ELSE 'unplanned' END)
                WHEN made_by_file IS NOT NULL AND other_graph THEN 'other_graph'
                WHEN optim THEN 'optimizer'
                WHEN origin = 'before_window' THEN 'before_window'
                ELSE 'other' END AS class
    FROM live
), sums AS (
    SELECT timeline_id, call_index,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'planned'), 0) AS planned_live_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'unplanned'), 0) AS unplanned_call_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'other_graph'), 0) AS other_graph_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'optimizer'), 0) AS optimizer_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'before_window'), 0) AS before_window_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE class = 'other'), 0) AS other_bytes,
           COALESCE(sum(size - requested_size), 0) AS rounding_bytes,
           COALESCE(sum(requested_size) FILTER (WHERE stream IS DISTINCT FROM call_stream), 0) AS other_stream_bytes
    FROM classed GROUP BY ALL
), counts AS (
    SELECT timeline_id, call_index,
           count(*) FILTER (WHERE status = 'mapped') AS mapped_allocations,
           count(*) FILTER (WHERE status = 'unmapped') AS unmapped_allocations,
           count(*) FILTER (WHERE status = 'not_allocated') AS not_allocated_buffers
    FROM planned_vs_actual GROUP BY ALL
)
SELECT g.timeline_id, g.call_index, g.wrapper_timeline_id, t.name AS graph,
       g.first_event, g.last_event, pm.peak_bytes AS planned_peak_bytes,
       pm.peak_step AS planned_peak_step, p.measured_peak_bytes, p.measured_peak_event,
       (SELECT mc.live_bytes FROM memory_curve mc WHERE mc.timeline_id = g.wrapper_timeline_id
          AND mc.step = (SELECT q.alloc_step FROM _call_alloc_map q
                         WHERE q.timeline_id = g.timeline_id AND q.call_index = g.call_index
                           AND q.event_index = p.measured_peak_event)) AS planned_bytes_at_measured_step,
       s.planned_live_bytes, s.unplanned_call_bytes, s.other_graph_bytes, s.optimizer_bytes,
       s.before_window_bytes, s.other_bytes, s.rounding_bytes, s.other_stream_bytes,
       c.mapped_allocations, c.unmapped_allocations, c.not_allocated_buffers
FROM graph_calls g JOIN peak p USING (timeline_id, call_index)
LEFT JOIN sums s USING (timeline_id, call_index)
LEFT JOIN counts c USING (timeline_id, call_index)
LEFT JOIN timeline_records t ON t.timeline_id = g.wrapper_timeline_id
LEFT JOIN peak_memory pm ON pm.timeline_id = g.wrapper_timeline_id
ORDER BY g.timeline_id, g.call_index;
