-- /metrics: open and expired waits per service and verdict at $now — approvals.sql
-- counted instead of listed (same table, same verdict macro, no limit).
SELECT
    service,
    hs_verdict_at(verdict, flip1_ns, flip1_verdict, NULL::BIGINT, NULL::VARCHAR, $now) AS verdict,
    count(*) AS n
FROM waits
GROUP BY ALL;
