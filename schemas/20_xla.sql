-- XLA buffer-assignment views: XLA's own claims beside what the events say.
-- Rows exist only for timelines ingested from XLA dumps (format xla_buffer_assignment).

-- xla_values: every XLA value (HloValue) with its placement, life and provenance.
--   buffer: instruction name with ShapeIndex ("custom-call.19.0{0}"); instruction: its name;
--   bytes: its size in its allocation (NULL: it has no allocation line, see no_allocation);
--   allocation, offset: where it sits; alloc_step/last_step: its BufferLiveRange (both live;
--     NULL: no live range, see no_live_range);
--   instruction_bytes: ByteSizeOf(defining instruction's shape, 8), the size XLA's peak
--     moment rule charges (a tuple element is charged its tuple's 8-byte-per-element table);
--   parameter: entry parameter number (NULL if not a parameter);
--   maybe_live_out: in an allocation XLA marks maybe-live-out; phi: a phi value;
--   op_type, op_name, source: the framework op it came from (HLO metadata);
--   used_by: the instructions that use it ("Used values" uses, operand numbers dropped).
CREATE OR REPLACE VIEW xla_values AS
SELECT b.timeline_id, b.buffer, b.producer AS instruction, b.bytes, b.allocation, b."offset",
       b.alloc_step, b.last_step, b.dtype, b.shape, b.layout,
       TRY_CAST(json_extract_string(b.attrs, '$.instruction_bytes') AS BIGINT) AS instruction_bytes,
       TRY_CAST(json_extract_string(b.attrs, '$.parameter') AS INTEGER) AS parameter,
       COALESCE(TRY_CAST(json_extract_string(b.attrs, '$.maybe_live_out') AS BOOLEAN), false)
           AS maybe_live_out,
       COALESCE(TRY_CAST(json_extract_string(b.attrs, '$.phi') AS BOOLEAN), false) AS phi,
       COALESCE(TRY_CAST(json_extract_string(b.attrs, '$.no_allocation') AS BOOLEAN), false)
           AS no_allocation,
       COALESCE(TRY_CAST(json_extract_string(b.attrs, '$.no_live_range') AS BOOLEAN), false)
           AS no_live_range,
       json_extract_string(b.attrs, '$.op_type') AS op_type,
       json_extract_string(b.attrs, '$.op_name') AS op_name,
       json_extract_string(b.attrs, '$.source') AS source,
       TRY_CAST(json_extract_string(b.attrs, '$.value_id') AS BIGINT) AS value_id,
       regexp_extract_all(COALESCE(json_extract_string(b.attrs, '$.uses'), ''),
                          '"([^",]+), operand', 1) AS used_by,
       b.line, b.attrs
FROM buffers b JOIN timeline_records t USING (timeline_id)
WHERE t.format = 'xla_buffer_assignment';

-- xla_unmatched: values the dump describes only half of, reported instead of dropped.
--   problem: 'no allocation line' (in BufferLiveRange only: size unknown, not counted) or
--            'no live range' (allocated, e.g. thread-local values of called computations:
--            liveness unknown, not counted).
CREATE OR REPLACE VIEW xla_unmatched AS
SELECT timeline_id, buffer, instruction, bytes, allocation, alloc_step, last_step,
       CASE WHEN no_allocation THEN 'no allocation line' ELSE 'no live range' END AS problem
FROM xla_values WHERE no_allocation OR no_live_range;

-- xla_peak_stated: XLA's own "Live ranges at K (peak)" list, one row per line, in order.
--   name: "name" (old form) or "name{index}" (new form); bytes: as XLA printed it
--   (old form: the defining instruction's size; new form: the value's own size).
CREATE OR REPLACE VIEW xla_peak_stated AS
SELECT timeline_id, step, form, ordinal, v.name, v.bytes
FROM (
    SELECT n.timeline_id,
           CAST(json_extract(n.attrs, '$.xla_peak.step') AS BIGINT) AS step,
           json_extract_string(n.attrs, '$.xla_peak.form') AS form,
           unnest(from_json(json_extract(n.attrs, '$.xla_peak.values'),
                            '[{"name": "VARCHAR", "bytes": "BIGINT"}]')) AS v,
           generate_subscripts(from_json(json_extract(n.attrs, '$.xla_peak.values'),
                                         '[{"name": "VARCHAR", "bytes": "BIGINT"}]'), 1) AS ordinal
    FROM timeline_notes n
    WHERE json_extract(n.attrs, '$.xla_peak') IS NOT NULL
);

-- _xla_live_at_stated: the values live (start <= K <= end) at XLA's stated step K, keyed
-- the way XLA's list names them, so that the two can be compared as multisets.
CREATE OR REPLACE VIEW _xla_live_at_stated AS
SELECT v.timeline_id,
       CASE WHEN k.form = 'old' THEN v.instruction ELSE v.buffer END AS name,
       CASE WHEN k.form = 'old' THEN v.instruction_bytes ELSE v.bytes END AS bytes
FROM xla_values v
JOIN (SELECT DISTINCT timeline_id, step, form FROM xla_peak_stated) k USING (timeline_id)
WHERE v.alloc_step <= k.step AND k.step <= v.last_step;

-- _xla_moment: XLA's peak moment recomputed by HloLiveRange::ComputePeakMemoryMoment's rule:
-- events (start, +size) and (end + 1, -size), sorted by time with starts before ends at
-- equal times; the moment is the time of the first strict new maximum of the running sum
-- (0 if it never rises above 0); size = instruction_bytes. complete: every value has a size.
CREATE OR REPLACE VIEW _xla_moment AS
WITH v AS (
    SELECT timeline_id, alloc_step, last_step, instruction_bytes FROM xla_values
    WHERE alloc_step IS NOT NULL AND last_step IS NOT NULL
), ev AS (
    SELECT timeline_id, alloc_step AS t, 0 AS is_end, instruction_bytes AS d FROM v
    UNION ALL
    SELECT timeline_id, last_step + 1, 1, -instruction_bytes FROM v
), grouped AS (
    SELECT timeline_id, t, is_end, sum(d) AS d FROM ev GROUP BY ALL
), running AS (
    SELECT timeline_id, t, is_end,
           sum(d) OVER (PARTITION BY timeline_id ORDER BY t, is_end ROWS UNBOUNDED PRECEDING) AS u
    FROM grouped
), best AS (
    SELECT timeline_id, t, u FROM running
    QUALIFY row_number() OVER (PARTITION BY timeline_id ORDER BY u DESC, t, is_end) = 1
)
SELECT c.timeline_id, c.complete,
       CASE WHEN NOT c.complete THEN NULL WHEN b.u > 0 THEN b.t ELSE 0 END AS step,
       CASE WHEN c.complete THEN b.u END AS usage
FROM (SELECT timeline_id, count(*) FILTER (WHERE instruction_bytes IS NULL) = 0 AS complete
      FROM v GROUP BY timeline_id) c
LEFT JOIN best b USING (timeline_id);

-- xla_peak_check: XLA's stated peak, checked rather than trusted. One row per XLA timeline
-- (the stated_* columns are NULL where the dump states no peak).
--   stated_step, stated_bytes, stated_values: XLA's "Live ranges at K (peak)" and its sum;
--   list_matches: live_at(timeline, K) holds exactly the values of that list, same sizes;
--   recomputed_step: K by XLA's own moment rule from the live ranges (NULL when a value has
--     no known instruction size); xla_moment_bytes: the running sum XLA maximised there
--     (starts at K counted before ends at K, so values freed after K-1 still count);
--   live_bytes_at_stated: tlview's live bytes at K (memory_curve: union per allocation);
--   peak_step, peak_bytes: tlview's peak (peak_memory);
--   stated_is_peak: XLA's K is where the true maximum is first reached;
--   agrees: stated step = recomputed step = tlview's peak step and stated bytes = peak bytes.
CREATE OR REPLACE VIEW xla_peak_check AS
WITH stated AS (
    SELECT timeline_id, any_value(step) AS step, any_value(form) AS form,
           sum(bytes) AS bytes, count(*) AS n_values
    FROM xla_peak_stated GROUP BY timeline_id
), mismatch AS (
    SELECT timeline_id, count(*) AS n FROM (
        (SELECT timeline_id, name, bytes FROM xla_peak_stated
         EXCEPT ALL SELECT timeline_id, name, bytes FROM _xla_live_at_stated)
        UNION ALL
        (SELECT timeline_id, name, bytes FROM _xla_live_at_stated
         EXCEPT ALL SELECT timeline_id, name, bytes FROM xla_peak_stated)
    ) GROUP BY timeline_id
)
SELECT t.timeline_id, s.form AS stated_form, s.step AS stated_step, s.bytes AS stated_bytes,
       s.n_values AS stated_values,
       CASE WHEN s.step IS NOT NULL THEN COALESCE(m.n, 0) = 0 END AS list_matches,
       x.step AS recomputed_step, x.usage AS xla_moment_bytes,
       c.live_bytes AS live_bytes_at_stated, p.peak_step, p.peak_bytes,
       p.peak_step = s.step AS stated_is_peak,
       COALESCE(s.step = x.step AND s.step = p.peak_step AND s.bytes = p.peak_bytes, false) AS agrees
FROM (SELECT timeline_id FROM timeline_records WHERE format = 'xla_buffer_assignment') t
LEFT JOIN stated s USING (timeline_id)
LEFT JOIN mismatch m USING (timeline_id)
LEFT JOIN _xla_moment x USING (timeline_id)
LEFT JOIN memory_curve c ON c.timeline_id = s.timeline_id AND c.step = s.step
LEFT JOIN peak_memory p ON p.timeline_id = t.timeline_id;

-- allocations: one row per XLA allocation.
--   size: as XLA states it; kind: parameter, output, maybe-live-out, preallocated-temp,
--   thread-local, constant... (comma-separated, in the dump's order); parameter: its number,
--   parameter_shape and parameter_index (ShapeIndex) as printed; output_shape: the module's
--   result shape, on the allocation that holds the output tuple;
--   n_values: values placed in it; bytes_at_peak: bytes covered by the union of its values
--   live at tlview's peak step (peak_memory); live_at_peak: how many of them are live there.
CREATE OR REPLACE VIEW allocations AS
WITH a AS (
    SELECT timeline_id, allocation,
           any_value(TRY_CAST(json_extract_string(attrs, '$.allocation_size') AS BIGINT)) AS size,
           any_value(json_extract_string(attrs, '$.allocation_kind')) AS kind,
           any_value(parameter) AS parameter,
           any_value(json_extract_string(attrs, '$.parameter_shape')) AS parameter_shape,
           any_value(json_extract_string(attrs, '$.parameter_index')) AS parameter_index,
           any_value(json_extract_string(attrs, '$.output_shape')) AS output_shape,
           count(*) AS n_values
    FROM xla_values WHERE allocation IS NOT NULL GROUP BY ALL
), at_peak AS (
    SELECT timeline_id, allocation, sum(hi - lo) AS bytes FROM (
        SELECT DISTINCT s.timeline_id, s.allocation, s.lo, s.hi FROM _segments s
        JOIN peak_memory p USING (timeline_id)
        WHERE s.alloc_step <= p.peak_step AND p.peak_step <= s.last_step)
    GROUP BY ALL
), n_at_peak AS (
    SELECT v.timeline_id, v.allocation, count(*) AS n FROM xla_values v
    JOIN peak_memory p USING (timeline_id)
    WHERE v.alloc_step <= p.peak_step AND p.peak_step <= v.last_step GROUP BY ALL
)
SELECT a.timeline_id, a.allocation, a.size, a.kind, a.parameter, a.parameter_shape,
       a.parameter_index, a.output_shape, a.n_values,
       CAST(COALESCE(b.bytes, 0) AS BIGINT) AS bytes_at_peak, COALESCE(n.n, 0) AS live_at_peak
FROM a LEFT JOIN at_peak b USING (timeline_id, allocation)
LEFT JOIN n_at_peak n USING (timeline_id, allocation);

-- allocation_conflicts: pairs of values in one allocation whose byte ranges overlap while
-- both are live (start <= s <= end). A correct assignment has none. Not a conflict: a
-- hand-over, where both cover the same [offset, offset+size), share exactly the one step
-- at which the earlier ends and the later begins, and the later is either defined by an
-- instruction that uses the earlier (in-place reuse of an operand's buffer) or a phi value
-- (a loop-carried alias of the same buffer, whose live ranges XLA normalises to touch).
--   overlap_from/overlap_to: the steps both are live; overlap_bytes: the bytes both cover.
CREATE OR REPLACE VIEW allocation_conflicts AS
SELECT a.timeline_id, a.allocation, a.buffer AS value_a, b.buffer AS value_b,
       a."offset" AS offset_a, a.bytes AS bytes_a, a.alloc_step AS start_a, a.last_step AS end_a,
       b."offset" AS offset_b, b.bytes AS bytes_b, b.alloc_step AS start_b, b.last_step AS end_b,
       greatest(a.alloc_step, b.alloc_step) AS overlap_from,
       least(a.last_step, b.last_step) AS overlap_to,
       least(a."offset" + a.bytes, b."offset" + b.bytes) - greatest(a."offset", b."offset")
           AS overlap_bytes
FROM xla_values a JOIN xla_values b
  ON a.timeline_id = b.timeline_id AND a.allocation = b.allocation AND a.buffer < b.buffer
WHERE a."offset" < b."offset" + b.bytes AND b."offset" < a."offset" + a.bytes
  AND a.alloc_step <= b.last_step AND b.alloc_step <= a.last_step
  AND NOT (a."offset" = b."offset" AND a.bytes = b.bytes
           AND least(a.last_step, b.last_step) = greatest(a.alloc_step, b.alloc_step)
           AND ((a.last_step = b.alloc_step AND (b.phi OR list_contains(a.used_by, b.instruction)))
             OR (b.last_step = a.alloc_step AND (a.phi OR list_contains(b.used_by, a.instruction)))));
