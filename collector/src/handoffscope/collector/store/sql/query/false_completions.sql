-- GET /api/v1/false_completions: runs first seen in [$since, $until) that claimed done
-- without a passing verifier (run completed, or a destination claimed done while its
-- wait was open), newest end first. A stored fact, not time-dependent.
SELECT run_id, service, final_agent, ended_ns, last_seen_ns, outcome_result, verifier
FROM runs
WHERE first_seen_ns >= $since
  AND first_seen_ns < $until
  AND false_complete
  AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
ORDER BY coalesce(ended_ns, last_seen_ns) DESC, run_id
LIMIT $limit;
