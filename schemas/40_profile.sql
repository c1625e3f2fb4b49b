-- Measured views: profiler traces (formats kineto, jax_trace), one timeline per trace/rank.
-- Times are integer nanoseconds from the trace's own clock (ts_ns, dur_ns).
-- Categories (see ingest/kineto.py): kernel, comm, memcpy, memset (GPU);
-- runtime, cpu_op, comm_call, annotation, gpu_annotation, python, memory, other.

-- measured: every measured event, with its end and the launch-join keys.
--   stream: the GPU stream for GPU events, the thread id for CPU events;
--   correlation: joins a GPU event to the runtime call that launched it;
--   ext: Kineto's External id, joins a runtime call to the CPU op it ran under;
--   rank: the trace's distributed rank (NULL when the trace does not say);
--   attrs: the event as the trace wrote it (JSON), e.g. attrs.args.grid.
CREATE OR REPLACE VIEW measured AS
SELECT e.timeline_id, e.seq, e.name, e.category, e.device, e.stream, e.ts_ns, e.dur_ns,
       e.ts_ns + e.dur_ns AS end_ns, e.correlation, e.bytes,
       CASE WHEN e.category IN ('runtime', 'cpu_op', 'comm_call')
            THEN TRY_CAST(json_extract(e.attrs, '$.args."External id"') AS BIGINT) END AS ext,
       TRY_CAST(json_extract(t.attrs, '$.rank') AS INTEGER) AS rank, e.attrs
FROM events e JOIN timeline_records t USING (timeline_id)
WHERE e.kind = 'kernel_measured';

-- gpu_activity: what ran on a GPU: kernels, communication kernels, copies and fills.
CREATE OR REPLACE VIEW gpu_activity AS
SELECT * FROM measured WHERE category IN ('kernel', 'comm', 'memcpy', 'memset');

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
--   launch_ts_ns: when the CPU asked; thread: the launching thread.
CREATE OR REPLACE VIEW kernel_launches AS
SELECT g.timeline_id, g.seq, g.name AS kernel, g.category, g.device, g.stream, g.ts_ns,
       g.dur_ns, g.correlation, r.name AS runtime, r.ts_ns AS launch_ts_ns,
       r.stream AS thread, op.name AS cpu_op, op.seq AS cpu_op_seq
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

-- comm_overlap: per communication kernel, how much of it computation hid.
--   overlapped_ns: the part of [ts, end) during which at least one compute
--   kernel (category 'kernel', any stream of the same device) ran;
--   exposed_ns = dur_ns - overlapped_ns. Copies/fills and CPU events never count.
--   op / group_size / bytes: from the kernel's collective record where the trace has it.
CREATE OR REPLACE VIEW comm_overlap AS
WITH ov AS (
    SELECT c.timeline_id, c.seq,
           CAST(COALESCE(sum(least(c.end_ns, k.e) - greatest(c.ts_ns, k.s)), 0) AS BIGINT) AS ov
    FROM gpu_activity c
    JOIN _islands k
      ON k.timeline_id = c.timeline_id AND k.device = c.device AND k.class = 'compute'
     AND k.s < c.end_ns AND k.e > c.ts_ns
    WHERE c.category = 'comm'
    GROUP BY c.timeline_id, c.seq
)
SELECT c.timeline_id, c.rank, c.device, c.stream, c.name, c.ts_ns, c.dur_ns,
       COALESCE(ov.ov, 0) AS overlapped_ns, c.dur_ns - COALESCE(ov.ov, 0) AS exposed_ns,
       round(100.0 * COALESCE(ov.ov, 0) / nullif(c.dur_ns, 0), 2) AS overlap_pct,
       json_extract_string(c.attrs, '$.args."Collective name"') AS op,
       TRY_CAST(json_extract(c.attrs, '$.args."Group size"') AS INTEGER) AS group_size,
       c.bytes, c.correlation, c.seq
FROM gpu_activity c LEFT JOIN ov USING (timeline_id, seq)
WHERE c.category = 'comm';

-- comm_overlap_summary: per timeline (rank) and device, the overlap of
-- communication with computation, as defined in the README:
--   comm_ns: time during which at least one communication kernel runs;
--   overlapped_ns: time during which at least one communication kernel AND at
--     least one computation kernel run; exposed_ns = comm_ns - overlapped_ns;
--   overlap_pct = 100 * overlapped_ns / comm_ns.
-- Communication = collective kernels (NCCL, RCCL); computation = all other GPU
-- kernels; memcpy/memset are neither; CPU events never count.
CREATE OR REPLACE VIEW comm_overlap_summary AS
WITH c AS (
    SELECT timeline_id, device, CAST(sum(e - s) AS BIGINT) AS comm_ns, count(*) AS n_islands
    FROM _islands WHERE class = 'comm' GROUP BY timeline_id, device
), o AS (
    SELECT c.timeline_id, c.device,
           CAST(sum(least(c.e, k.e) - greatest(c.s, k.s)) AS BIGINT) AS overlapped_ns
    FROM _islands c JOIN _islands k
      ON k.timeline_id = c.timeline_id AND k.device = c.device
     AND c.class = 'comm' AND k.class = 'compute' AND k.s < c.e AND k.e > c.s
    GROUP BY c.timeline_id, c.device
), n AS (
    SELECT timeline_id, device, count(*) AS n_comm_kernels
    FROM gpu_activity WHERE category = 'comm' GROUP BY timeline_id, device
)
SELECT c.timeline_id, TRY_CAST(json_extract(t.attrs, '$.rank') AS INTEGER) AS rank, c.device,
       n.n_comm_kernels, c.comm_ns, COALESCE(o.overlapped_ns, 0) AS overlapped_ns,
       c.comm_ns - COALESCE(o.overlapped_ns, 0) AS exposed_ns,
       round(100.0 * COALESCE(o.overlapped_ns, 0) / nullif(c.comm_ns, 0), 2) AS overlap_pct
FROM c JOIN timeline_records t ON t.timeline_id = c.timeline_id
LEFT JOIN o ON o.timeline_id = c.timeline_id AND o.device = c.device
LEFT JOIN n ON n.timeline_id = c.timeline_id AND n.device = c.device;

-- profiler_steps: the ProfilerStep#N ranges of each trace (CPU side).
CREATE OR REPLACE VIEW profiler_steps AS
SELECT timeline_id, TRY_CAST(split_part(name, '#', 2) AS BIGINT) AS step, name,
       ts_ns, dur_ns, end_ns
FROM measured
WHERE category = 'annotation' AND name LIKE 'ProfilerStep#%';

-- step_totals: per trace and ProfilerStep, the GPU work launched during it (a
-- GPU event belongs to the step whose CPU range holds its launching runtime call).
--   kernel_ns / comm_ns / memcpy_ns / memset_ns: summed durations by category;
--   n_kernels: GPU events launched; gpu_first_ns / gpu_last_ns: their extent.
CREATE OR REPLACE VIEW step_totals AS
SELECT p.timeline_id, p.step, p.name, p.dur_ns AS cpu_dur_ns,
       count(l.seq) AS n_gpu_events,
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'kernel'), 0) AS BIGINT) AS kernel_ns,
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'comm'), 0) AS BIGINT) AS comm_ns,
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'memcpy'), 0) AS BIGINT) AS memcpy_ns,
       CAST(COALESCE(sum(l.dur_ns) FILTER (WHERE l.category = 'memset'), 0) AS BIGINT) AS memset_ns,
       min(l.ts_ns) AS gpu_first_ns, max(l.ts_ns + l.dur_ns) AS gpu_last_ns
FROM profiler_steps p
LEFT JOIN kernel_launches l
  ON l.timeline_id = p.timeline_id AND l.launch_ts_ns >= p.ts_ns AND l.launch_ts_ns < p.end_ns
GROUP BY p.timeline_id, p.step, p.name, p.dur_ns;

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
