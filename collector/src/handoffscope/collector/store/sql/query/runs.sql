-- GET /api/v1/runs: runs first seen in [$since, $until) that match the filters, in the
-- asked order, at most $limit after skipping $offset (the pages of the list); `total`
-- counts every match (the list's "N of M").
-- The time filter comes first and is a plain range on first_seen_ns: runs are appended
-- in update order, so row-group min/max skips the weeks outside the window.
-- The verdict is judged at $now from the stored timeline (hs_verdict_at), so
-- destination_not_started / approval_overdue appear the moment they become true.
-- Every filter is NULL when not asked for:
--   $q      a run id (or its start), or a trace id or conversation (thread) id that one of
--           the run's evidence spans carried (spans received since $spans_since);
--   $agent  an agent on the run's path, holding its work or ending it;
--   $state  in_flight (no terminal run.status), stuck (in flight, silent since before
--           $stuck_before and not held by a wait — health_runs.sql's rule), looping
--           (its loop fact set, and in flight or last seen since $looped_since — the
--           same rule as health_runs.sql's; the API passes the window's start there and
--           no first-seen bound, so a loop that started before the window is listed).
-- $page_since: where the newest-first page is looked for first (see `probe`).
-- $sort: newest (first seen, newest first), severity (verdict precedence, $ranked, then
-- stuck first, then longest silent), silent (longest silent first), last_seen.
-- The page and its total apart, over the filters as CTEs inlined (NOT MATERIALIZED):
-- `count(*) OVER ()` over the page's query kept every run of the window, with all its
-- columns, for the window and the sort: 1.2-1.9 s for the 3.2M runs of 30 days at 10M
-- handoffs; the count alone reads only the filters' columns.
WITH hits AS (
    SELECT DISTINCT handoff_run_id AS run_id
    FROM spans
    WHERE $q::VARCHAR IS NOT NULL
      AND received_ns >= $spans_since
      AND handoff_run_id IS NOT NULL
      AND (trace_id = lower($q) OR gen_ai_conversation_id = $q)
),
r AS NOT MATERIALIZED (
    SELECT
        run_id, service, status, started_ns, first_seen_ns, last_seen_ns, current_agent,
        handoff_count, loop, false_complete, failed, pending_approvals, turns,
        unverified, delegation_count, min_received_ns, final_agent, source, start_agent,
        input_tokens, output_tokens, model_calls, cost_usd, model, unpriced_models,
        coalesce(last_handoff_ns, last_seen_ns) AS last_activity_ns,
        (status IS NULL OR status = $started) AS in_flight,
        hs_verdict_at(verdict, flip1_ns, flip1_verdict, flip2_ns, flip2_verdict, $now) AS verdict
    FROM runs
    WHERE first_seen_ns >= $since
      AND first_seen_ns < $until
      AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
      AND (
          $agent::VARCHAR IS NULL
          OR current_agent = $agent
          OR final_agent = $agent
          OR list_contains(path, $agent)
      )
      AND (
          $q::VARCHAR IS NULL
          OR starts_with(run_id, $q)
          -- A list, not `run_id IN (SELECT ...)`: DuckDB plans that as a join that reads
          -- every run_id of the window even when $q is NULL (the OR is folded away only
          -- after the join is planned): 70-130 ms of the 3M runs of 30 days at 10M
          -- handoffs; this list is never built or read then.
          OR list_contains((SELECT list(run_id) FROM hits), run_id)
      )
),
f AS NOT MATERIALIZED (
    SELECT *, hs_stuck(in_flight, last_activity_ns, pending_approvals, $stuck_before) AS stuck
    FROM r
    WHERE $verdict::VARCHAR IS NULL OR verdict = $verdict
),
matching AS NOT MATERIALIZED (
    SELECT *
    FROM f
    WHERE $state::VARCHAR IS NULL
       OR ($state = 'in_flight' AND in_flight)
       OR ($state = 'stuck' AND stuck)
       OR ($state = 'looping' AND loop AND (in_flight OR last_seen_ns >= $looped_since))
),
probe AS (
    -- Newest first (the default order): the page is among the runs first seen at or
    -- after the $reach-th newest first_seen_ns ($reach = $offset + $limit: where the page
    -- ends). Looked for first among the runs first seen since $page_since (the window's
    -- last hour: row-group min/max skips the rest), which holds the whole page whenever
    -- it holds $reach matches — anything before it is older than all of them. 30 days at
    -- 10M handoffs: 54-57 → 22-23 ms.
    SELECT first_seen_ns
    FROM matching
    WHERE $sort = 'newest' AND first_seen_ns >= $page_since
    ORDER BY first_seen_ns DESC
    LIMIT $reach
),
probed AS (
    SELECT count(*) AS n, min(first_seen_ns) AS lo FROM probe
),
newest AS (
    -- Else over the whole window, on that one column: the page's sort then orders a few
    -- rows instead of every run of the window with all their columns (250 ms for the
    -- 3.2M runs of 30 days at 10M handoffs). The conditions make the scan read nothing
    -- when the probe found the page or the page is in another order (a CASE would not:
    -- DuckDB evaluates both branches' subqueries; 7-30 ms of the other orders).
    SELECT CASE WHEN $sort = 'newest' THEN coalesce(
        (SELECT lo FROM probed WHERE n >= $reach),
        (
            SELECT min(first_seen_ns)
            FROM (
                SELECT first_seen_ns
                FROM matching
                WHERE $sort = 'newest' AND (SELECT n FROM probed) < $reach
                ORDER BY first_seen_ns DESC
                LIMIT $reach
            )
        )
    ) END AS lo
)
SELECT *, (SELECT count(*) FROM matching) AS total
FROM matching
WHERE first_seen_ns >= coalesce((SELECT lo FROM newest), -9223372036854775808)
ORDER BY
    CASE WHEN $sort = 'severity' THEN list_position($ranked, verdict) END,
    CASE WHEN $sort = 'severity' THEN NOT stuck END,
    CASE WHEN $sort IN ('severity', 'silent') THEN last_activity_ns END,
    CASE WHEN $sort = 'last_seen' THEN -last_seen_ns END,
    -first_seen_ns,
    run_id
LIMIT $limit OFFSET $offset;
