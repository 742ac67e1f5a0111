-- Put the batch's newly seen runs (hs_edge_runs, newest first; bucket column hour holds
-- the day) in front of each edge and day's list, keeping 20.
INSERT INTO edge_runs_daily BY NAME SELECT * RENAME (hour AS day) FROM hs_edge_runs
ON CONFLICT DO UPDATE SET runs = list_slice(excluded.runs || edge_runs_daily.runs, 1, 20);
