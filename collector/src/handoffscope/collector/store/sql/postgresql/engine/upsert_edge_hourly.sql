-- Add this step's handoffs and their legs' usage per hour, edge, verdict and
-- declaredness (hs_edge_delta).
INSERT INTO edge_hourly (hour, service, from_agent, to_agent, verdict, undeclared, handoffs,
                         input_tokens, output_tokens, model_calls, cost_nusd, unpriced)
SELECT hour, service, from_agent, to_agent, verdict, undeclared, handoffs,
       input_tokens, output_tokens, model_calls, cost_nusd, unpriced
FROM hs_edge_delta
ON CONFLICT (hour, service, from_agent, to_agent, verdict, undeclared)
DO UPDATE SET
    handoffs = edge_hourly.handoffs + excluded.handoffs,
    input_tokens = edge_hourly.input_tokens + excluded.input_tokens,
    output_tokens = edge_hourly.output_tokens + excluded.output_tokens,
    model_calls = edge_hourly.model_calls + excluded.model_calls,
    cost_nusd = edge_hourly.cost_nusd + excluded.cost_nusd,
    unpriced = edge_hourly.unpriced + excluded.unpriced;
