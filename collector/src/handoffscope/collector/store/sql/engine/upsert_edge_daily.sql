-- Add the batch's deltas to the daily edge rollup (hs_edge_delta, one row per key;
-- its bucket column is called hour in Python and holds the day here).
INSERT INTO edge_daily BY NAME SELECT * RENAME (hour AS day) FROM hs_edge_delta
ON CONFLICT DO UPDATE SET
    handoffs = edge_daily.handoffs + excluded.handoffs,
    input_tokens = edge_daily.input_tokens + excluded.input_tokens,
    output_tokens = edge_daily.output_tokens + excluded.output_tokens,
    model_calls = edge_daily.model_calls + excluded.model_calls,
    cost_nusd = edge_daily.cost_nusd + excluded.cost_nusd,
    unpriced = edge_daily.unpriced + excluded.unpriced;
