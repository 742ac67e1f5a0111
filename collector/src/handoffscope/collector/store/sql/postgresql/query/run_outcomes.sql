-- The verifier outcome spans of one run, oldest first, at most $limit: read apart from
-- the page of spans, so the run's outcomes do not depend on which page is asked for.
SELECT handoff_id, outcome_verifier, outcome_result, outcome_receipt_id, end_ns
FROM spans
WHERE received_ns BETWEEN $lo AND $hi
  AND handoff_run_id = $run_id
  AND outcome_result IS NOT NULL
ORDER BY start_ns, end_ns, span_id
LIMIT $limit;
