-- Add the batch's +1/-1 deltas to the daily rollup (hs_daily_delta holds one row per
-- key, pre-summed in Python: ON CONFLICT may not touch a row twice in one statement).
INSERT INTO handoff_daily BY NAME SELECT * FROM hs_daily_delta
ON CONFLICT DO UPDATE SET handoffs = handoff_daily.handoffs + excluded.handoffs;
