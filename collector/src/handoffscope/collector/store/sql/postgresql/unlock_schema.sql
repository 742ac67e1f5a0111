-- Release the schema lock taken by lock_schema.sql.
SELECT pg_advisory_unlock(hashtext($name));
