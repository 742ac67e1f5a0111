-- Open (undecided) and expired waits of one run, verdicts judged at $now.
SELECT
    *,
    hs_verdict_at(verdict, flip1_ns, flip1_verdict, NULL::BIGINT, NULL::VARCHAR, $now) AS verdict_now
FROM waits
WHERE run_key = $run_key
  AND run_id = $run_id
ORDER BY checkpointed_ns, handoff_id;
