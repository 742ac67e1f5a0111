-- Take a lease ($name: the judge's, the notifier's) if no other collector holds it: a
-- session advisory lock, so it is released the moment the holder's connection ends — a
-- collector killed mid-step hands the judgment over as soon as PostgreSQL sees its socket
-- close, and its open transaction (verdicts and work-list deletes together) rolls back.
SELECT pg_try_advisory_lock(hashtext($name));
