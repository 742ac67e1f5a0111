-- The first handoff of one run (in run order) whose verdict, judged at $now, is the
-- run's own: what the run's `why` names, whichever page of handoffs is asked for.
SELECT
    *,
    hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict_now
FROM handoffs
WHERE first_seen_ns BETWEEN $lo AND $hi
  AND run_key = $run_key
  AND run_id = $run_id
  AND hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) = $verdict
ORDER BY seq, first_seen_ns, handoff_id
LIMIT 1;
