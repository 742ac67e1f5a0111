-- The newest runs per day and edge (the delta carries the day in `hour`), 20 at most.
INSERT INTO edge_runs_daily (day, service, from_agent, to_agent, runs)
SELECT hour, service, from_agent, to_agent, runs FROM hs_edge_runs
ON CONFLICT (day, service, from_agent, to_agent)
DO UPDATE SET runs = (excluded.runs || edge_runs_daily.runs)[1:20];
