-- Append the new versions of changed handoffs (hs_handoff_rows, registered by the engine).
-- By position: PostgreSQL has no INSERT ... BY NAME, and the registered table's columns
-- are the table's columns in order (tests/collector/test_postgres_store.py ties them).
INSERT INTO handoffs SELECT * FROM hs_handoff_rows;
