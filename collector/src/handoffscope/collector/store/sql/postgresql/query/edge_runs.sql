-- The newest runs behind each edge in the window: the daily lists of the whole days
-- inside it ($d0..$d1, hours $dh0..$dh1) and the hourly lists of the other hours it
-- touches ($r0..$r1), walked newest bucket first per edge until 20 ids are collected,
-- so a 30-day window reads ~30 small lists per edge, not 720.
-- PostgreSQL: cardinality() for len(), unnest WITH ORDINALITY + array_agg for flatten(list()).
WITH buckets AS (
    SELECT from_agent, to_agent, (day + 1) * 24 AS ends, runs
    FROM edge_runs_daily
    WHERE day BETWEEN $d0 AND $d1
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
    UNION ALL
    SELECT from_agent, to_agent, hour + 1 AS ends, runs
    FROM edge_runs
    WHERE hour BETWEEN $r0 AND $r1
      AND hour NOT BETWEEN $dh0 AND $dh1
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
),
walked AS (
    SELECT
        from_agent,
        to_agent,
        ends,
        runs,
        sum(cardinality(runs)) OVER (
            PARTITION BY from_agent, to_agent ORDER BY ends DESC ROWS UNBOUNDED PRECEDING
        ) AS upto
    FROM buckets
)
SELECT
    nullif(w.from_agent, '') AS from_agent,
    nullif(w.to_agent, '') AS to_agent,
    array_agg(u.run ORDER BY w.ends DESC, u.ord) AS runs
FROM walked AS w
CROSS JOIN LATERAL unnest(w.runs) WITH ORDINALITY AS u(run, ord)
WHERE w.upto - cardinality(w.runs) < 20
GROUP BY 1, 2;
