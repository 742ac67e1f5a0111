-- PostgreSQL engine step 15: hs_stuck, the one "stuck" predicate every read query uses
-- (as the DuckDB macro, store/sql/engine/ddl/0022_stuck.sql): in flight, silent since
-- before stuck_before, not held by an open wait. A plain SQL function, IMMUTABLE, so the
-- planner inlines it into every query that calls it. OR REPLACE: applying the step again
-- (a store rewound to an earlier engine version) leaves the same function.
CREATE OR REPLACE FUNCTION hs_stuck(
    in_flight boolean, last_activity_ns bigint, pending_approvals integer, stuck_before bigint
) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT in_flight AND last_activity_ns < stuck_before AND pending_approvals = 0
$fn$;
