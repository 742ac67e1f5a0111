-- Remove the stored turns a step replaces or whose runs are gone (hs_turn_gone).
DELETE FROM turns
WHERE run_key IN (SELECT run_key FROM hs_turn_gone)
  AND run_id IN (SELECT run_id FROM hs_turn_gone);
