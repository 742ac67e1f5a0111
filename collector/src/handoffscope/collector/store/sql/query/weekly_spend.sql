-- GET /api/v1/review/weekly, its `spend`: run_daily (engine step 23) folded into ISO weeks
-- since $start_day (the first Monday, as a day number), one row per (week, verdict the
-- runs ended in): what runs that ended in a loop, a rejection or a false completion cost.
SELECT
    strftime(DATE '1970-01-01' + day::INTEGER, '%G-W%V') AS week,
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
