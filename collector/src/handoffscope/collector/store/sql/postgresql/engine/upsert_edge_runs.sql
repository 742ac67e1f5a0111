-- The newest runs per hour and edge: this step's first, then the stored ones, 20 at most.
INSERT INTO edge_runs (hour, service, from_agent, to_agent, runs)
SELECT hour, service, from_agent, to_agent, runs FROM hs_edge_runs
ON CONFLICT (hour, service, from_agent, to_agent)
DO UPDATE SET runs = (excluded.runs || edge_runs.runs)[1:20];
