-- How many handoff rows one run has (the total behind a page of run_handoffs.sql),
-- delegations included; the same row-group window as that query.
SELECT count(*) AS n
FROM handoffs
WHERE first_seen_ns BETWEEN $lo AND $hi
  AND run_key = $run_key
  AND run_id = $run_id;
