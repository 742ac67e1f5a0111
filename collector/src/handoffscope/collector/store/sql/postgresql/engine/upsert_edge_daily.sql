-- The same delta as upsert_edge_hourly.sql, keyed by day (the engine's delta carries the
-- day in `hour` for this table, as for DuckDB).
INSERT INTO edge_daily (day, service, from_agent, to_agent, verdict, undeclared, handoffs)
SELECT hour, service, from_agent, to_agent, verdict, undeclared, handoffs FROM hs_edge_delta
ON CONFLICT (day, service, from_agent, to_agent, verdict, undeclared)
DO UPDATE SET handoffs = edge_daily.handoffs + excluded.handoffs;
