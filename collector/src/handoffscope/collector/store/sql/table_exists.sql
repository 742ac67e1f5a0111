-- Whether a table exists in the main schema: before step 1 of ddl/_order there is no meta
-- table to read a version from, and that is how a fresh file is recognised.
SELECT count(*) > 0
FROM information_schema.tables
WHERE table_schema = 'main' AND table_name = $name;
