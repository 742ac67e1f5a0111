-- GET /api/v1/review/weekly, its `continuity`: the later turns of conversations (each run
-- after a conversation's first) first seen since $since, counted per UTC day (the ns its
-- day starts at), service and continuity — continuity.sql's rule, read from the judge's
-- rollups (engine step 25: turn_daily, turn_entries; engine/turns.py keeps them as
-- conversations change), so a long history is a few thousand rows here, not every run.
--   $since            turns first seen since then (a UTC midnight)
--   $service, $scope  one service / these services (NULL: every one)
-- '' stands for NULL in the rollups' keys.
SELECT
    d.day * 86400000000000 AS day_ns,
    nullif(d.service, '') AS service,
    hs_continuity(
        TRUE,
        nullif(d.previous_final, ''),
        nullif(d.start_agent, ''),
        nullif(d.first_to_agent, ''),
        EXISTS (
            SELECT 1 FROM turn_entries AS e
            WHERE e.service = d.service AND e.agent = d.start_agent
              AND (e.declared > 0 OR e.firsts > 0)
        )
    ) AS continuity,
    sum(d.turns)::BIGINT AS turns
FROM turn_daily AS d
WHERE d.day * 86400000000000 >= $since AND d.turns <> 0
  AND ($service::VARCHAR IS NULL OR nullif(d.service, '') = $service)
  AND ($scope::VARCHAR[] IS NULL OR nullif(d.service, '') = ANY($scope::VARCHAR[]))
GROUP BY 1, 2, 3
HAVING sum(d.turns) <> 0
ORDER BY 1, 2, 3;
