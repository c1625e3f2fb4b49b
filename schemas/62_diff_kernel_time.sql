-- Two profiler traces' kernel time compared, kernel by kernel.

-- kernel_time_diff(a, b): measured time per kernel of two aligned timelines (profiler
-- traces, or compiled timelines with a trace attached): one row per kernel of a and the
-- kernel of b it is aligned with (NULL on the side it is missing from), over the aligned
-- steps that have a time.
--   method: same | changed (the aligned kernels differ: another kernel for the same op) |
--   deleted | inserted; a_launches / b_launches, a_time_ns / b_time_ns, delta_ns = b - a;
--   share: delta_ns / the total delta (the rows' delta_ns sum to it), NULL if it is 0.
--   Ordered by |delta_ns|, largest first.
CREATE OR REPLACE MACRO kernel_time_diff(a_tid, b_tid) AS TABLE
WITH d AS (
    SELECT CASE WHEN method IN ('same', 'changed')
                     AND _diff_name(a_kernel) IS NOT DISTINCT FROM _diff_name(b_kernel)
                THEN 'same' ELSE method END AS method,
           a_kernel, b_kernel, a_step, b_step, a_time_ns, b_time_ns
    FROM timeline_diff(a_tid, b_tid)
    WHERE a_time_ns IS NOT NULL OR b_time_ns IS NOT NULL
), k AS (
    SELECT method, a_kernel, b_kernel, count(a_time_ns) AS a_launches,
           count(b_time_ns) AS b_launches,
           CAST(COALESCE(sum(a_time_ns), 0) AS BIGINT) AS a_time_ns,
           CAST(COALESCE(sum(b_time_ns), 0) AS BIGINT) AS b_time_ns
    FROM d GROUP BY ALL
)
SELECT method, a_kernel, b_kernel, a_launches, b_launches, a_time_ns, b_time_ns,
       b_time_ns - a_time_ns AS delta_ns,
       (b_time_ns - a_time_ns) / nullif(sum(b_time_ns - a_time_ns) OVER (), 0) AS share
FROM k
ORDER BY abs(b_time_ns - a_time_ns) DESC, a_kernel NULLS LAST, b_kernel;
