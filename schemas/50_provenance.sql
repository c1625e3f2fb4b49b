-- Provenance views: who made a buffer and what an instruction reads, in the terms a person
-- debugging memory asks in ("which op holds this memory?", "what does this node read?").
-- The terminal UI groups live buffers and describes nodes through them.

-- xla_instructions: each instruction of an XLA timeline (a node) as its HLO text states it.
--   opcode: the node's class (fusion, dot, custom-call, ...);
--   operands: the instructions it reads, in operand order (the %names between the
--     opcode's parentheses; constants and literals name none);
--   op_type, op_name: the framework op it came from (HLO metadata);
--   source: the model's file:line where the metadata has source_file (and source_line);
--   stack_frame_id: the metadata's stack frame (newer JAX states this instead of a file);
--   fusion_kind, calls: for fusions and calls, as printed.
-- Instructions the dump prints no text for (not in its used-values section) have NULL
-- operands; their values are still in buffers, by producer.
CREATE OR REPLACE VIEW xla_instructions AS
SELECT n.timeline_id, n.step, n.node, n.node_class AS opcode,
       regexp_extract_all(
           regexp_extract(json_extract_string(n.attrs, '$.instruction'),
                          '\b' || n.node_class || '\((.*?)\)(?:,\s*[a-z_]+=|\s*$)', 1),
           '%([^\s,()]+)', 1) AS operands,
       json_extract_string(n.attrs, '$.op_type') AS op_type,
       json_extract_string(n.attrs, '$.op_name') AS op_name,
       json_extract_string(n.attrs, '$.source_file')
           || COALESCE(':' || json_extract_string(n.attrs, '$.source_line'), '') AS source,
       json_extract_string(n.attrs, '$.stack_frame_id') AS stack_frame_id,
       json_extract_string(n.attrs, '$.fusion_kind') AS fusion_kind,
       json_extract_string(n.attrs, '$.calls') AS calls
FROM nodes n JOIN timeline_records t USING (timeline_id)
WHERE t.format = 'xla_buffer_assignment';

-- buffer_provenance: every buffer counted in graph memory (inputs and buffers without a
-- known life are left out, as in memory_curve) with the keys live memory is grouped by.
--   producer: the node that made it (buffers.producer; output code names none, so there
--     it is the launch at the buffer's allocation step);
--   origin: the framework op behind it: the XLA value's op_name; the 'Original ATen' ops
--     of the output-code launch that allocates it, comma-separated; the target of the FX
--     node that makes it; NULL where the dump says nothing (scheduler IR);
--   source: the model's source line: XLA metadata (file:line), the FX node's
--     '# File:' comment; NULL where the dump has none;
--   alloc_site: where the dump places it: 'allocation N' for an XLA value (values sharing
--     an allocation share its bytes), else 'line N' of the dump that allocates it.
CREATE OR REPLACE VIEW buffer_provenance AS
SELECT b.timeline_id, b.buffer, b.bytes, b.dtype, b.shape, b.alloc_step, b.last_step,
       b.size_expr, b.allocation,
       COALESCE(b.producer, n.node) AS producer,
       COALESCE(json_extract_string(b.attrs, '$.op_name'),
                array_to_string(from_json(json_extract(n.attrs, '$.original_aten'),
                                          '["VARCHAR"]'), ', '),
                CASE WHEN n.node_class = 'fx_node' THEN regexp_replace(n.kernel, '^torch\.ops\.', '')
                END) AS origin,
       COALESCE(json_extract_string(b.attrs, '$.source'),
                json_extract_string(n.attrs, '$.source')) AS source,
       CASE WHEN b.allocation IS NOT NULL THEN 'allocation ' || b.allocation
            WHEN b.line IS NOT NULL THEN 'line ' || b.line END AS alloc_site
FROM _counted b
LEFT JOIN nodes n ON n.timeline_id = b.timeline_id AND n.step = b.alloc_step;
