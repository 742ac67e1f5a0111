-- Append the new versions of changed waits (hs_wait_rows, registered by the engine).
-- By position: PostgreSQL has no INSERT ... BY NAME, and the registered table's columns
-- are the table's columns in order (tests/collector/test_postgres_store.py ties them).
INSERT INTO waits SELECT * FROM hs_wait_rows;
