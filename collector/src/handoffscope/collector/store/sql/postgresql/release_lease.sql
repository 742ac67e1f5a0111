-- Give a lease back (a clean shutdown); try_lease.sql says why it is a lock.
SELECT pg_advisory_unlock(hashtext($name));
