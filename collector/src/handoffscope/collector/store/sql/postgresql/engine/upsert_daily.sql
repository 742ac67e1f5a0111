-- Add this step's handoff counts per day, service, edge and reason (hs_daily_delta,
-- summed per key already, as ON CONFLICT may see each key once per statement).
INSERT INTO handoff_daily (day, service, from_agent, to_agent, reason, handoffs)
SELECT day, service, from_agent, to_agent, reason, handoffs FROM hs_daily_delta
ON CONFLICT (day, service, from_agent, to_agent, reason)
DO UPDATE SET handoffs = handoff_daily.handoffs + excluded.handoffs;
