-- Retention: open waits of runs whose last evidence is older than $cutoff.
DELETE FROM waits
WHERE run_key IN (SELECT run_key FROM runs WHERE last_seen_ns < $cutoff);
