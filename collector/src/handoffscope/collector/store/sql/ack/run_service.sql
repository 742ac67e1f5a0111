-- POST /api/v1/acknowledgements: the run it names exists, and its service (stored with
-- the acknowledgement for the `service` label of /metrics' handoffscope_acknowledged).
-- The integer run_key makes the scan a cheap integer compare, as in query/run.sql.
SELECT service
FROM runs
WHERE run_key = $run_key
  AND run_id = $run_id;
