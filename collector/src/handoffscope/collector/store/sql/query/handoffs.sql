-- GET /api/v1/handoffs (and the live board's newest unhealthy): handoffs first seen
-- in [$since, $until), newest first, verdicts judged at $now.
-- Time range first (row-group pruning on first_seen_ns), then the cheap filters.
-- $unhealthy keeps only handoffs unhealthy at $now: unhealthy_from_ns (stored by the
-- engine: when the timeline first holds a failure verdict) makes that one integer
-- compare, cheap enough to run over a 30-day window.
-- $page_since, $wide_since: where the page is looked for first and next (see `probe`).
-- The page is found over the filter and sort columns alone, then its rows' other
-- columns are read by rowid (stable within this statement's snapshot): reading all 48
-- columns of every match before the top N cost 45-50 ms against 25-30 (16k matches of
-- a day at ten million handoffs), and 1.4 s against 0.2 for a rare verdict over 30 days.
WITH matching AS NOT MATERIALIZED (
    SELECT rowid AS row_id, first_seen_ns, run_id, handoff_id
    FROM handoffs
    WHERE first_seen_ns >= $since
      AND first_seen_ns < $until
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
      AND (
          $verdict::VARCHAR IS NULL
          OR hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) = $verdict
      )
      AND (NOT $unhealthy OR unhealthy_from_ns <= $now)
),
probe AS (
    -- The page is among the handoffs first seen at or after the $limit-th newest
    -- first_seen_ns. Looked for first among those first seen since $page_since (the
    -- window's last hour: row-group min/max skips the rest), which holds the page
    -- whenever it holds $limit matches; else among those since $wide_since (its last
    -- day); else over the whole window — each on that one column, not with the page's
    -- ids (as runs.sql): the unhealthy of 30 days at ten million handoffs took 150-290 ms,
    -- sorting the ids of every match, and 45-60 ms on first_seen_ns alone when the last
    -- hour held fewer than a page (1.4M matches ordered), 10-13 ms over the last day.
    -- Each later rung is guarded by the earlier ones' counts, so it reads nothing when
    -- they found the page (a CASE would not: DuckDB evaluates both branches' subqueries).
    SELECT first_seen_ns
    FROM matching
    WHERE first_seen_ns >= $page_since
    ORDER BY first_seen_ns DESC
    LIMIT $limit
),
probed AS (
    SELECT count(*) AS n, min(first_seen_ns) AS lo FROM probe
),
reach AS (
    SELECT coalesce(
        (SELECT lo FROM probed WHERE n >= $limit),
        (
            SELECT CASE WHEN count(*) >= $limit THEN min(first_seen_ns) END
            FROM (
                SELECT first_seen_ns
                FROM matching
                WHERE (SELECT n FROM probed) < $limit AND first_seen_ns >= $wide_since
                ORDER BY first_seen_ns DESC
                LIMIT $limit
            )
        ),
        (
            SELECT min(first_seen_ns)
            FROM (
                SELECT first_seen_ns
                FROM matching
                WHERE (SELECT n FROM probed) < $limit
                  AND (
                      SELECT count(*)
                      FROM (
                          SELECT 1 FROM matching
                          WHERE first_seen_ns >= $wide_since
                          LIMIT $limit
                      )
                  ) < $limit
                ORDER BY first_seen_ns DESC
                LIMIT $limit
            )
        )
    ) AS lo
),
page AS (
    SELECT row_id, first_seen_ns, run_id, handoff_id
    FROM matching
    WHERE first_seen_ns >= coalesce((SELECT lo FROM reach), -9223372036854775808)
    ORDER BY first_seen_ns DESC, run_id, handoff_id
    LIMIT $limit
)
SELECT
    h.* EXCLUDE (verdict),
    hs_verdict_at(h.verdict, h.flip1_ns, h.flip1_verdict, h.flip2_ns, h.flip2_verdict, $now) AS verdict_now
FROM page
JOIN handoffs AS h ON h.rowid = page.row_id
ORDER BY page.first_seen_ns DESC, page.run_id, page.handoff_id;
