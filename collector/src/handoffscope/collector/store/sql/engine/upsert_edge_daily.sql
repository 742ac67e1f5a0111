-- Add the batch's +1/-1 deltas to the daily edge rollup (hs_edge_delta, one row per key;
-- its bucket column is called hour in Python and holds the day here).
INSERT INTO edge_daily BY NAME SELECT * RENAME (hour AS day) FROM hs_edge_delta
ON CONFLICT DO UPDATE SET handoffs = edge_daily.handoffs + excluded.handoffs;
