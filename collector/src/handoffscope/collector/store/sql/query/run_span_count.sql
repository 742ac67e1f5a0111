-- How many evidence spans one run has stored (the total behind a page of run_spans.sql).
SELECT count(*) AS n
FROM spans
WHERE received_ns BETWEEN $lo AND $hi
  AND handoff_run_id = $run_id;
