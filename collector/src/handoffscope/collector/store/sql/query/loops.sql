-- GET /api/v1/loops: runs first seen in [$since, $until) whose handoffs repeat a
-- (to_agent, fingerprint, state_version) key or close a cycle without progress,
-- most recently active first. `loop` is a stored fact (find_loops over the run), not
-- time-dependent, so no verdict needs judging here.
SELECT run_id, service, loop_cycle AS cycle, loop_repeats AS repeats, turns, status, last_seen_ns,
       input_tokens, output_tokens, model_calls, cost_usd, model, unpriced_models,
       burned_input_tokens, burned_output_tokens, burned_model_calls, burned_cost_usd
FROM runs
WHERE first_seen_ns >= $since
  AND first_seen_ns < $until
  AND loop
  AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
ORDER BY last_seen_ns DESC, run_id
LIMIT $limit;
