-- Give the judge lease back (a clean shutdown); try_judge_lease.sql says why it is a lock.
SELECT pg_advisory_unlock(hashtext($name));
