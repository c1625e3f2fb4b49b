-- Two allocator snapshots compared by allocation site.

-- site_diff(a, b): two allocator snapshots' (or two memory profiles') allocation sites
-- side by side (no alignment needed): bytes live at each one's peak per site
-- (allocation_sites.bytes_at_peak; memory_profile_sites.bytes), the delta b - a (the rows
-- sum to the difference of the two peaks), allocations in each window (a profile: the
-- buffers live at its instant) and each site's own maximum (a profile: its bytes).
-- Ordered by |delta_bytes|, largest first.
CREATE OR REPLACE MACRO site_diff(a_tid, b_tid) AS TABLE
WITH s AS (
    SELECT timeline_id, site, bytes_at_peak, allocations, max_bytes FROM allocation_sites
    WHERE timeline_id IN (a_tid, b_tid)
    UNION ALL
    SELECT timeline_id, site, bytes, buffers, bytes FROM memory_profile_sites
    WHERE timeline_id IN (a_tid, b_tid)
), sa AS (SELECT * FROM s WHERE timeline_id = a_tid),
sb AS (SELECT * FROM s WHERE timeline_id = b_tid)
SELECT COALESCE(sb.site, sa.site) AS site,
       COALESCE(sa.bytes_at_peak, 0) AS a_bytes_at_peak,
       COALESCE(sb.bytes_at_peak, 0) AS b_bytes_at_peak,
       COALESCE(sb.bytes_at_peak, 0) - COALESCE(sa.bytes_at_peak, 0) AS delta_bytes,
       COALESCE(sa.allocations, 0) AS a_allocations, COALESCE(sb.allocations, 0) AS b_allocations,
       sa.max_bytes AS a_max_bytes, sb.max_bytes AS b_max_bytes
FROM sa FULL JOIN sb ON sa.site = sb.site
ORDER BY abs(COALESCE(sb.bytes_at_peak, 0) - COALESCE(sa.bytes_at_peak, 0)) DESC, site;
