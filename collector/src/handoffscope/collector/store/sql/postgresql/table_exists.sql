-- Whether a table exists in this session's schema: before step 1 there is no meta table
-- to read a version from, and that is how a fresh database is recognised.
SELECT to_regclass($name) IS NOT NULL;
