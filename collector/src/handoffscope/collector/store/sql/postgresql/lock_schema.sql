-- Hold the schema lock for this session while schema steps run (postgres_store.py).
SELECT pg_advisory_lock(hashtext($name));
