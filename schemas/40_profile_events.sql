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
