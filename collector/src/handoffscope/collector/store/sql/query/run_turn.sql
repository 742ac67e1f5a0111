-- One run's turn in its conversation, for its detail (GET /api/v1/runs/{id}): its
-- position, the run before it and its continuity (docs/semconv.md, "Turns").
--   $conversation  the run's conversation (its row's conversation_id)
--   $run           the run
-- Read from `turns`, the judge's copy of what a turn is told from (engine/turns.py),
-- ordered as continuity.sql orders the runs themselves (order_ns is the run's start, else
-- its first seen; final_agent its final agent, else its current one): the conversation's
-- runs are found by one constant filter on a narrow table (row groups skipped by min/max;
-- PostgreSQL's index), where continuity.sql joins every run to its conversation — 25 ms
-- of a run detail's 70 at ten million handoffs, against 5.
WITH ordered AS (
    SELECT
        t.run_id, t.service, t.start_agent, t.first_to_agent,
        lag(t.run_id) OVER w AS previous_run_id,
        lag(t.final_agent) OVER w AS previous_final_agent,
        lag(t.service) OVER w AS previous_service,
        row_number() OVER w AS position
    FROM turns AS t
    WHERE t.conversation_id = $conversation
    WINDOW w AS (ORDER BY t.order_ns, t.run_id)
)
SELECT
    o.run_id, o.position, o.previous_run_id, o.previous_final_agent, o.previous_service,
    hs_continuity(
        o.previous_run_id IS NOT NULL,
        o.previous_final_agent,
        o.start_agent,
        o.first_to_agent,
        e.agent IS NOT NULL
    ) AS continuity
FROM ordered AS o
-- The start agent an entry agent of the run's service (turn_entries: one row per
-- service and agent), joined for this one run — an EXISTS was judged for every run of
-- the conversation first.
LEFT JOIN turn_entries AS e
    ON e.service = coalesce(o.service, '') AND e.agent = o.start_agent
   AND (e.declared > 0 OR e.firsts > 0)
WHERE o.run_id = $run;
