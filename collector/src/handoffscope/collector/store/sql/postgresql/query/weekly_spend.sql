-- GET /api/v1/review/weekly, its `spend` (query/weekly_spend.sql). PostgreSQL: to_char
-- for strftime (ISO week), sums cast back to BIGINT.
SELECT
    to_char(DATE '1970-01-01' + day::integer, 'IYYY-"W"IW') AS week,
    verdict,
    sum(runs)::BIGINT AS runs,
    sum(input_tokens)::BIGINT AS input_tokens,
    sum(output_tokens)::BIGINT AS output_tokens,
    sum(model_calls)::BIGINT AS model_calls,
    sum(cost_nusd)::BIGINT AS cost_nusd,
    sum(unpriced)::BIGINT AS unpriced,
    sum(burned_tokens)::BIGINT AS burned_tokens,
    sum(burned_cost_nusd)::BIGINT AS burned_cost_nusd
FROM run_daily
WHERE day >= $start_day
  AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
GROUP BY 1, 2
HAVING sum(runs) <> 0
ORDER BY week, verdict;
