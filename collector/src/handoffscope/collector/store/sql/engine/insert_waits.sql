-- Append the new versions of open waits (hs_wait_rows).
INSERT INTO waits BY NAME SELECT * FROM hs_wait_rows;
