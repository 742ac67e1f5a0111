-- How many runs first seen in [$since, $until) claimed done without a passing verifier:
-- false_completions.sql counted instead of listed. The figure behind the Live board's
-- "done without proof" tile and the False completions page's "N of M".
SELECT count(*) AS n
FROM runs
WHERE first_seen_ns >= $since
  AND first_seen_ns < $until
  AND false_complete
  AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]));
