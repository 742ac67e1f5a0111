-- Stored handoff rows of runs being reloaded (hs_reload: run_id, run_key).
-- A run's handoffs start between the run's first and last evidence ($lo..$hi over the
-- runs reloaded), which lets row-group min/max skip the rest of the history.
SELECT *
FROM handoffs
WHERE first_seen_ns BETWEEN $lo AND $hi
  AND run_key IN (SELECT run_key FROM hs_reload)
  AND run_id IN (SELECT run_id FROM hs_reload);
