-- GET /api/v1/runs: runs first seen in [$since, $until) that match the filters, in the
-- asked order, at most $limit; `total` counts every match (the list's "N of M").
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
-- $sort: newest (first seen, newest first), severity (verdict precedence, $ranked, then
-- stuck first, then longest silent), silent (longest silent first), last_seen.
-- PostgreSQL: = ANY / array_position for DuckDB's list functions; and the page and its
-- total apart. `count(*) OVER ()` over the page's query made PostgreSQL judge, number and
-- sort every run of the window to return 100 (1.1 s for a 30-day window of 300k runs,
-- EXPLAIN ANALYZE over bench_scale_out.py's 1M-handoff history; DuckDB's columnar scan
-- does the same in milliseconds). Here the filters are one CTE inlined twice (NOT
-- MATERIALIZED): the page reads runs_first_seen newest first and stops at $limit, the
-- total counts the matches with nothing else computed, or, with no filter but the window
-- and service, comes mostly from run_hours (counting 3M runs of a 30-day window through
-- the index took 1.0 s at 10M handoffs). Newest-first is written
-- `first_seen_ns DESC` (not `-first_seen_ns`) so that the index order serves it.
WITH hits AS (
    SELECT DISTINCT handoff_run_id AS run_id
    FROM spans
    WHERE $q::VARCHAR IS NOT NULL
      AND received_ns >= $spans_since
      AND handoff_run_id IS NOT NULL
      AND (trace_id = lower($q::text) OR gen_ai_conversation_id = $q)
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
          OR $agent = ANY(path)
      )
      AND (
          $q::VARCHAR IS NULL
          OR starts_with(run_id, $q)
          OR run_id IN (SELECT run_id FROM hits)
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
bounds AS MATERIALIZED (
    -- The whole UTC hours inside the window, [h0, h1), and the partial ends left over:
    -- [$since, lo) and [hi, $until) (empty, or the whole window, when no hour fits).
    -- In numeric, as a window reaching the ends of bigint must not overflow.
    SELECT h0, h1,
           least(h0::numeric * 3600000000000, $until::numeric)::bigint AS lo,
           greatest(
               h1::numeric * 3600000000000,
               least(h0::numeric * 3600000000000, $until::numeric)
           )::bigint AS hi
    FROM (
        SELECT ceil($since::numeric / 3600000000000)::bigint AS h0,
               floor($until::numeric / 3600000000000)::bigint AS h1
    ) AS d
),
counted AS MATERIALIZED (
    -- The total without filters but the window and service: the whole hours from
    -- run_hours (engine step 12), the partial ends counted through runs_first_seen.
    SELECT (
        SELECT coalesce(sum(runs), 0)
        FROM run_hours
        WHERE hour >= (SELECT h0 FROM bounds)
          AND hour < (SELECT h1 FROM bounds)
          AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
    ) + (
        SELECT count(*)
        FROM runs
        WHERE (
              (first_seen_ns >= $since AND first_seen_ns < (SELECT lo FROM bounds))
              OR (first_seen_ns >= (SELECT hi FROM bounds) AND first_seen_ns < $until)
          )
          AND ($service::VARCHAR IS NULL OR service = $service) AND ($scope::VARCHAR[] IS NULL OR service = ANY($scope::VARCHAR[]))
    ) AS n
)
SELECT
    *,
    -- InitPlans, each computed once and only when its branch is taken. '' as a service
    -- is run_hours' key for runs without one, so it is counted the long way.
    CASE
        WHEN $agent::VARCHAR IS NULL AND $q::VARCHAR IS NULL AND $verdict::VARCHAR IS NULL
         AND $state::VARCHAR IS NULL AND coalesce($service::VARCHAR, '-') <> ''
        THEN (SELECT n FROM counted)
        ELSE (SELECT count(*) FROM matching)
    END AS total
FROM matching
ORDER BY
    CASE WHEN $sort = 'severity' THEN array_position($ranked::text[], verdict) END,
    CASE WHEN $sort = 'severity' THEN NOT stuck END,
    CASE WHEN $sort IN ('severity', 'silent') THEN last_activity_ns END,
    CASE WHEN $sort = 'last_seen' THEN -last_seen_ns END,
    first_seen_ns DESC,
    run_id
LIMIT $limit OFFSET $offset;
