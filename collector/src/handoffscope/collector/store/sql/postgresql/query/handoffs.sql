-- GET /api/v1/handoffs (and the live board's newest unhealthy): handoffs first seen
-- in [$since, $until), newest first, verdicts judged at $now.
-- Time range first (row-group pruning on first_seen_ns), then the cheap filters.
-- $unhealthy keeps only handoffs unhealthy at $now: unhealthy_from_ns (stored by the
-- engine: when the timeline first holds a failure verdict) makes that one integer
-- compare, cheap enough to run over a 30-day window.
-- PostgreSQL: no * EXCLUDE: the stored verdict comes along, verdict_now is what is read.
WITH h AS (
    SELECT
        *,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict_now
    FROM handoffs
    WHERE first_seen_ns >= $since
      AND first_seen_ns < $until
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
)
SELECT *
FROM h
WHERE ($verdict::VARCHAR IS NULL OR verdict_now = $verdict)
  AND (NOT $unhealthy OR unhealthy_from_ns <= $now)
ORDER BY first_seen_ns DESC, run_id, handoff_id
LIMIT $limit;
