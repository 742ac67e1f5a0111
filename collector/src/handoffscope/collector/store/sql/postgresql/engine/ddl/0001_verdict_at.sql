-- PostgreSQL engine step 1: hs_verdict_at, the verdict of a stored timeline at query time
-- (as the DuckDB macro, store/sql/engine/ddl/0001_verdict_at.sql): the verdict before any
-- threshold, then up to two (instant, verdict) flips. A plain SQL function, IMMUTABLE, so
-- the planner inlines it into every query that calls it.
CREATE FUNCTION hs_verdict_at(
    verdict text, flip1_ns bigint, flip1_verdict text,
    flip2_ns bigint, flip2_verdict text, now_ns bigint
) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT CASE
        WHEN flip2_ns <= now_ns THEN flip2_verdict
        WHEN flip1_ns <= now_ns THEN flip1_verdict
        ELSE verdict
    END
$fn$;
