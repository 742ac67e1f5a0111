-- /metrics: what runs cost per service and the verdict they ended in, over everything
-- retained, from the weekly review's run rollup (engine step 23: run_daily), so /metrics
-- and the review's `spend` count the same.
SELECT service, verdict, sum(input_tokens)::BIGINT AS input_tokens,
       sum(output_tokens)::BIGINT AS output_tokens, sum(model_calls)::BIGINT AS model_calls,
       sum(cost_nusd)::BIGINT AS cost_nusd
FROM run_daily
GROUP BY service, verdict
HAVING sum(input_tokens) + sum(output_tokens) + sum(model_calls) + sum(cost_nusd) <> 0;
