-- DELETE /api/v1/acknowledgements, and a new acknowledgement replacing the active one of
-- its target: the target's active acknowledgements end at $now (kept, as history). The
-- rows it cleared come back, so the API can answer 404 when none was active.
UPDATE acknowledgements
SET cleared_ns = $now
WHERE event = $event
  AND run_id = $run_id
  AND handoff_id IS NOT DISTINCT FROM CAST($handoff_id AS VARCHAR)
  AND cleared_ns IS NULL
  AND until_ns > $now
RETURNING run_id;
