-- Append the new versions of changed runs (hs_run_rows).
INSERT INTO runs BY NAME SELECT * FROM hs_run_rows;
