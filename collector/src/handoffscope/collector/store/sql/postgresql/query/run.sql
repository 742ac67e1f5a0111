-- GET /api/v1/runs/{run_id}: the run's row, verdict judged at $now.
-- No index: the integer run_key (md5 of the id) makes the scan a cheap integer compare;
-- run_id guards against a key collision.
SELECT
    *,
    hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict_now
FROM runs
WHERE run_key = $run_key
  AND run_id = $run_id;
