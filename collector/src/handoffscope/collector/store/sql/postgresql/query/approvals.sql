-- GET /api/v1/approvals: open and expired waits, overdue first, then uncertain, then
-- by deadline (soonest first; none last). The waits table holds only undecided and
-- expired waits, so it stays small and needs no time filter.
-- $overdue / $uncertain are the verdict names, bound from semconv; $offset pages through
-- every wait in this order (the answer's `total` counts them all).
-- PostgreSQL: the order is found over the sort keys and row_seq alone, then the page's
-- rows are read: sorting whole rows took 83 ms for 40k waits (bench_scale_out.py's
-- 10M-handoff history), the narrow sort 35 ms.
WITH top AS (
    SELECT
        row_seq,
        CASE hs_verdict_at(verdict, flip1_ns, flip1_verdict, NULL::BIGINT, NULL::VARCHAR, $now)
            WHEN $overdue THEN 0 WHEN $uncertain THEN 1 ELSE 2
        END AS rank,
        deadline_ns,
        checkpointed_ns,
        run_id,
        handoff_id
    FROM waits
    WHERE ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
    ORDER BY rank, deadline_ns NULLS LAST, checkpointed_ns, run_id, handoff_id
    LIMIT $limit OFFSET $offset
)
SELECT
    w.*,
    hs_verdict_at(w.verdict, w.flip1_ns, w.flip1_verdict, NULL::BIGINT, NULL::VARCHAR, $now) AS verdict_now
FROM top
JOIN waits AS w USING (row_seq)
ORDER BY top.rank, top.deadline_ns NULLS LAST, top.checkpointed_ns, top.run_id, top.handoff_id;
