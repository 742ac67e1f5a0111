-- Every stored run's key: the engine keeps them (8 bytes a run, sorted) to tell a new
-- run from one it evicted from memory without asking the database for each new id.
SELECT run_key FROM runs;
