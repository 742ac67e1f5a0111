-- Open and expired waits per service and verdict at $now, run-level (no handoff.id) and
-- handoff-level alike, whatever their age: approvals.sql counted instead of listed (same
-- table, same verdict macro, no limit). The one count behind /metrics' approval gauges,
-- the Live board's overdue tile and the Approvals page's figures.
-- new: of those, the ones whose deadline passed inside [$since, $now) — the trend.
-- PostgreSQL: explicit GROUP BY.
SELECT
    service,
    hs_verdict_at(verdict, flip1_ns, flip1_verdict, NULL::BIGINT, NULL::VARCHAR, $now) AS verdict,
    count(*) AS n,
    count(*) FILTER (WHERE deadline_ns >= $since AND deadline_ns < $now) AS n_new
FROM waits
GROUP BY 1, 2;
