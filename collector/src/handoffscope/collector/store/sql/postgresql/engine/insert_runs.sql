-- Append the new versions of changed runs (hs_run_rows, registered by the engine).
-- By position: PostgreSQL has no INSERT ... BY NAME, and the registered table's columns
-- are the table's columns in order (tests/collector/test_postgres_store.py ties them).
INSERT INTO runs SELECT * FROM hs_run_rows;
