-- Named queries over the XLA views (schemas/20_xla.sql), for the CLI and the TUI.
-- Every value is a ? parameter.

-- name: xla_peak_check_of
SELECT * FROM xla_peak_check WHERE timeline_id = ?;

-- name: xla_allocations_of
SELECT * FROM allocations WHERE timeline_id = ? ORDER BY size DESC, allocation;

-- name: xla_allocation_conflicts_of
SELECT * FROM allocation_conflicts WHERE timeline_id = ? ORDER BY allocation, value_a, value_b;

-- name: xla_unmatched_of
SELECT * FROM xla_unmatched WHERE timeline_id = ? ORDER BY problem, buffer;

-- name: xla_peak_stated_of
SELECT * FROM xla_peak_stated WHERE timeline_id = ? ORDER BY ordinal;
