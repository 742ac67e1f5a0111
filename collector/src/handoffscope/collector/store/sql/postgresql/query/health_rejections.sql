-- /metrics: rejected handoffs per service and reason over everything retained, from the
-- weekly review's daily rollup (0005_handoff_daily.sql), so /metrics and
-- /api/v1/review/weekly count the same rejections. reason is 'route' for
-- route_rejected, the rejection.reason for contract_rejected; '' rows are not rejections.
-- PostgreSQL: explicit GROUP BY.
SELECT service, reason, sum(handoffs)::BIGINT AS n
FROM handoff_daily
WHERE reason <> ''
GROUP BY 1, 2
HAVING sum(handoffs) <> 0;
