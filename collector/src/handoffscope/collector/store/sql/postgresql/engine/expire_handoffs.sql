-- Retention: handoffs of runs whose last evidence is older than $cutoff.
-- A run's handoffs started before its last evidence, so first_seen_ns < $cutoff prunes.
DELETE FROM handoffs
WHERE first_seen_ns < $cutoff
  AND run_key IN (SELECT run_key FROM runs WHERE last_seen_ns < $cutoff);
