-- Stored open-wait rows of runs being reloaded (hs_reload).
SELECT *
FROM waits
WHERE run_key IN (SELECT run_key FROM hs_reload)
  AND run_id IN (SELECT run_id FROM hs_reload);
