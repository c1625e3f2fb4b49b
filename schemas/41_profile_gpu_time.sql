-- GPU time of profiler traces: when each device and stream was busy, its idle gaps, and
-- how much of the communication time computation hid.

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
