-- The same delta as upsert_edge_hourly.sql, keyed by day (the engine's delta carries the
-- day in `hour` for this table, as for DuckDB).
INSERT INTO edge_daily (day, service, from_agent, to_agent, verdict, undeclared, handoffs,
                        input_tokens, output_tokens, model_calls, cost_nusd, unpriced)
SELECT hour, service, from_agent, to_agent, verdict, undeclared, handoffs,
       input_tokens, output_tokens, model_calls, cost_nusd, unpriced
FROM hs_edge_delta
ON CONFLICT (day, service, from_agent, to_agent, verdict, undeclared)
DO UPDATE SET
    handoffs = edge_daily.handoffs + excluded.handoffs,
    input_tokens = edge_daily.input_tokens + excluded.input_tokens,
    output_tokens = edge_daily.output_tokens + excluded.output_tokens,
    model_calls = edge_daily.model_calls + excluded.model_calls,
    cost_nusd = edge_daily.cost_nusd + excluded.cost_nusd,
    unpriced = edge_daily.unpriced + excluded.unpriced;
