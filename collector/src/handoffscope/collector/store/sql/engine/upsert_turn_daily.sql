-- Add a step's +1/-1 deltas of later turns (hs_turn_daily_delta, one row per key).
INSERT INTO turn_daily BY NAME SELECT * FROM hs_turn_daily_delta
ON CONFLICT DO UPDATE SET turns = turn_daily.turns + excluded.turns;
