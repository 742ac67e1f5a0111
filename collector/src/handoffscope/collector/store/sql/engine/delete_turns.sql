-- Remove the stored turns a step replaces, or whose runs are gone (hs_turn_changed: the
-- rows of changed_turns.sql, old_* as stored).
DELETE FROM turns
WHERE run_key IN (SELECT old_run_key FROM hs_turn_changed WHERE old_run_id IS NOT NULL)
  AND run_id IN (SELECT old_run_id FROM hs_turn_changed WHERE old_run_id IS NOT NULL);
