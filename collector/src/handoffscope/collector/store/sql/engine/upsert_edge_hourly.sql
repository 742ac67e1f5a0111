-- Add the batch's deltas to the hourly edge rollup (hs_edge_delta: one row per key,
-- pre-summed in Python, since ON CONFLICT may not touch a row twice per statement):
-- the handoff count and their legs' usage (engine step 23).
INSERT INTO edge_hourly BY NAME SELECT * FROM hs_edge_delta
ON CONFLICT DO UPDATE SET
    handoffs = edge_hourly.handoffs + excluded.handoffs,
    input_tokens = edge_hourly.input_tokens + excluded.input_tokens,
    output_tokens = edge_hourly.output_tokens + excluded.output_tokens,
    model_calls = edge_hourly.model_calls + excluded.model_calls,
    cost_nusd = edge_hourly.cost_nusd + excluded.cost_nusd,
    unpriced = edge_hourly.unpriced + excluded.unpriced;
