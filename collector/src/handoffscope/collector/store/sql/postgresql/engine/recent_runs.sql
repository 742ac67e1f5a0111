-- Runs that received evidence since $since, newest first, at most $limit: the ones the
-- engine reloads into memory at start-up (others are reloaded if evidence comes).
SELECT run_id, run_key
FROM runs
WHERE max_received_ns >= $since
ORDER BY max_received_ns DESC
LIMIT $limit;
