-- Add a step's +1/-1 deltas of later turns (hs_turn_daily_delta, one row per key).
INSERT INTO turn_daily (day, service, start_agent, first_to_agent, previous_final, turns)
SELECT day, service, start_agent, first_to_agent, previous_final, turns
FROM hs_turn_daily_delta
ON CONFLICT (day, service, start_agent, first_to_agent, previous_final)
DO UPDATE SET turns = turn_daily.turns + excluded.turns;
