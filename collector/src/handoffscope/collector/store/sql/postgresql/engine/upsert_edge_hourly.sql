-- Add this step's handoffs per hour, edge, verdict and declaredness (hs_edge_delta).
INSERT INTO edge_hourly (hour, service, from_agent, to_agent, verdict, undeclared, handoffs)
SELECT hour, service, from_agent, to_agent, verdict, undeclared, handoffs FROM hs_edge_delta
ON CONFLICT (hour, service, from_agent, to_agent, verdict, undeclared)
DO UPDATE SET handoffs = edge_hourly.handoffs + excluded.handoffs;
