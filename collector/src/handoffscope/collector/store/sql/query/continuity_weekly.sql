-- GET /api/v1/review/weekly, its `continuity`: the later turns of conversations (each run
-- after a conversation's first) first seen since $since, counted per UTC day (the ns its
-- day starts at), service and continuity — continuity.sql's rule, counted here so that a
-- long history never leaves the database row by row (300k turns at 1M handoffs).
--   $since            turns first seen since then; their conversations are read whole
--   $service, $scope  one service / these services (NULL: every one)
-- Entry agents, per service, as continuity.sql learns them: declared on any run, or the
-- start agent of a conversation's first run (DISTINCT ON: one row per conversation, no
-- sort of every run).
WITH touched AS (
    SELECT DISTINCT conversation_id
    FROM runs
    WHERE conversation_id IS NOT NULL AND first_seen_ns >= $since
),
turns AS (
    SELECT
        r.service, r.first_seen_ns, r.start_agent, r.first_to_agent,
        lag(r.run_id) OVER w AS previous_run_id,
        lag(coalesce(r.final_agent, r.current_agent)) OVER w AS previous_final_agent
    FROM runs AS r
    JOIN touched AS s ON s.conversation_id = r.conversation_id
    WINDOW w AS (
        PARTITION BY r.conversation_id
        ORDER BY coalesce(r.started_ns, r.first_seen_ns), r.run_id
    )
),
counted AS (
    SELECT * FROM turns
    WHERE previous_run_id IS NOT NULL
      AND first_seen_ns >= $since
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
),
firsts AS (
    SELECT DISTINCT ON (conversation_id) conversation_id, service, start_agent
    FROM runs
    WHERE conversation_id IS NOT NULL
      AND coalesce(service, '') IN (SELECT DISTINCT coalesce(service, '') FROM counted)
    ORDER BY conversation_id, coalesce(started_ns, first_seen_ns), run_id
),
entry AS (
    SELECT service, start_agent FROM firsts WHERE start_agent IS NOT NULL
    UNION
    SELECT service, unnest(entry_agents) AS start_agent
    FROM runs
    WHERE coalesce(service, '') IN (SELECT DISTINCT coalesce(service, '') FROM counted)
)
SELECT
    t.first_seen_ns - ((t.first_seen_ns % 86400000000000) + 86400000000000) % 86400000000000
        AS day_ns,
    t.service,
    hs_continuity(
        TRUE,
        t.previous_final_agent,
        t.start_agent,
        t.first_to_agent,
        EXISTS (
            SELECT 1 FROM entry AS e
            WHERE e.service IS NOT DISTINCT FROM t.service AND e.start_agent = t.start_agent
        )
    ) AS continuity,
    count(*) AS turns
FROM counted AS t
GROUP BY 1, 2, 3
ORDER BY 1, 2, 3;
