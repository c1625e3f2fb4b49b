-- Profiler steps (the ProfilerStep#N ranges) with the GPU work each launched, and the
-- allocator's curve a trace measured ([memory] events).

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

-- _step_gpu_extent: per trace and ProfilerStep that launched GPU work, its extent:
-- step_totals' gpu_first_ns / gpu_last_ns, by the same rule (a GPU event belongs to the
-- step whose CPU range holds its launching runtime call), read without the CPU op around
-- that call, which kernel_launches joins by the External id in every CPU op's JSON and an
-- extent does not need (whatif_stragglers reads it: at 1,024 ranks that parse was a
-- second of its time).
CREATE OR REPLACE VIEW _step_gpu_extent AS
WITH l AS (
    SELECT g.timeline_id, g.ts_ns, g.end_ns, r.ts_ns AS launch_ts_ns
    FROM gpu_activity g JOIN measured r
      ON r.timeline_id = g.timeline_id AND r.category = 'runtime'
     AND r.correlation = g.correlation
)
SELECT p.timeline_id, p.step, min(l.ts_ns) AS gpu_first_ns, max(l.end_ns) AS gpu_last_ns
FROM l ASOF JOIN profiler_steps p
  ON p.timeline_id = l.timeline_id AND l.launch_ts_ns >= p.ts_ns
WHERE l.launch_ts_ns < p.end_ns
GROUP BY p.timeline_id, p.seq, p.step;

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
