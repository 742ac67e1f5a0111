-- Retention: runs whose last evidence is older than $cutoff (after their handoffs/waits).
DELETE FROM runs WHERE last_seen_ns < $cutoff;
