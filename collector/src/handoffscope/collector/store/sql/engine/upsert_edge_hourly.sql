-- Add the batch's +1/-1 deltas to the hourly edge rollup (hs_edge_delta: one row per
-- key, pre-summed in Python, since ON CONFLICT may not touch a row twice per statement).
INSERT INTO edge_hourly BY NAME SELECT * FROM hs_edge_delta
ON CONFLICT DO UPDATE SET handoffs = edge_hourly.handoffs + excluded.handoffs;
