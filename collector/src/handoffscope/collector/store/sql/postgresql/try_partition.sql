-- Take judge partition $part if no other collector holds it: a session advisory lock on
-- ($lock, $part), freed the moment the holder's session ends, so a collector killed mid-step
-- hands its partitions over as soon as PostgreSQL sees its socket close (its open step,
-- verdicts and work-list deletes together, rolls back).
SELECT pg_try_advisory_lock($lock::integer, $part::integer);
