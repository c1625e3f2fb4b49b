-- Named queries of the profiler-trace views (schemas/40_profile.sql).

-- name: measured_summary
SELECT count(*) AS n_events,
       count(*) FILTER (WHERE category IN ('kernel', 'comm')) AS n_kernels,
       CAST(COALESCE(sum(dur_ns) FILTER (WHERE category IN ('kernel', 'comm')), 0) AS BIGINT)
           AS kernel_ns,
       count(*) FILTER (WHERE category = 'comm') AS n_comm,
       (SELECT list(overlap_pct ORDER BY device) FROM comm_overlap_summary s
        WHERE s.timeline_id = ?) AS overlap_pct
FROM events WHERE kind = 'kernel_measured' AND timeline_id = ?;
