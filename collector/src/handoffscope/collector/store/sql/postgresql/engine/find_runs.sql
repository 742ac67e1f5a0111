-- Stored rows of runs the engine holds no state for (hs_lookup: run_id, run_key).
-- The integer run_key filter does the work; run_id guards against a hash collision.
SELECT *
FROM runs
WHERE run_key IN (SELECT run_key FROM hs_lookup)
  AND run_id IN (SELECT run_id FROM hs_lookup);
