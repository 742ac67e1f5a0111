-- Put the batch's newly seen runs (hs_edge_runs, newest first) in front of each edge
-- and hour's list, keeping 20.
INSERT INTO edge_runs BY NAME SELECT * FROM hs_edge_runs
ON CONFLICT DO UPDATE SET runs = list_slice(excluded.runs || edge_runs.runs, 1, 20);
