-- Add the batch's run deltas (hs_run_daily_delta, one row per key, pre-summed) to the
-- run_daily rollup (engine step 23).
INSERT INTO run_daily BY NAME SELECT * FROM hs_run_daily_delta
ON CONFLICT DO UPDATE SET
    runs = run_daily.runs + excluded.runs,
    input_tokens = run_daily.input_tokens + excluded.input_tokens,
    output_tokens = run_daily.output_tokens + excluded.output_tokens,
    model_calls = run_daily.model_calls + excluded.model_calls,
    cost_nusd = run_daily.cost_nusd + excluded.cost_nusd,
    unpriced = run_daily.unpriced + excluded.unpriced,
    burned_tokens = run_daily.burned_tokens + excluded.burned_tokens,
    burned_cost_nusd = run_daily.burned_cost_nusd + excluded.burned_cost_nusd;
