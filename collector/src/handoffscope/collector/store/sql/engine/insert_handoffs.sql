-- Append the new versions of changed handoffs (an Arrow table registered as
-- hs_handoff_rows by the engine). BY NAME so column order in Python cannot drift.
INSERT INTO handoffs BY NAME SELECT * FROM hs_handoff_rows;
