-- PostgreSQL store step 5: hs_ensure_span_day(day) — the partition of spans for one UTC
-- day (day = start_ns div 86400e9), created if absent. Collectors insert concurrently, so
-- creation takes a transaction-scoped advisory lock first: without it two collectors
-- meeting a new day at once both try CREATE TABLE and one fails its whole commit (and
-- the lock alone is not enough: see the handler below). A day
-- whose spans already sit in spans_old (an older retention window) stays there: the
-- partition cannot be attached over rows the default partition holds, and those rows are
-- found through spans all the same.
CREATE FUNCTION hs_ensure_span_day(day bigint) RETURNS void
LANGUAGE plpgsql AS $fn$
DECLARE
    part text := format('spans_d%s', day);
    lo bigint := day * 86400000000000;
BEGIN
    IF to_regclass(part) IS NOT NULL THEN
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('handoffscope.spans.partitions'));
    IF to_regclass(part) IS NOT NULL THEN
        RETURN;
    END IF;
    IF EXISTS (SELECT 1 FROM spans_old WHERE start_ns >= lo AND start_ns < lo + 86400000000000) THEN
        RETURN;
    END IF;
    BEGIN
        EXECUTE format(
            'CREATE TABLE %I PARTITION OF spans FOR VALUES FROM (%s) TO (%s)',
            part, lo, lo + 86400000000000
        );
    EXCEPTION WHEN duplicate_table THEN
        -- Another collector created it and committed while this one waited for the
        -- lock; the catalog lookup above ran on an older snapshot.
        NULL;
    END;
END
$fn$;

-- hs_drop_empty_span_days(cutoff): after retention has deleted the spans that ended
-- before the cutoff, drop the day partitions left empty whose whole day lies before it
-- (a long span that started on such a day and is still within retention keeps its day).
-- Returns how many were dropped.
CREATE FUNCTION hs_drop_empty_span_days(cutoff bigint) RETURNS integer
LANGUAGE plpgsql AS $fn$
DECLARE
    part text;
    empty boolean;
    dropped integer := 0;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('handoffscope.spans.partitions'));
    FOR part IN
        SELECT c.relname
        FROM pg_inherits AS i
        JOIN pg_class AS c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'spans'::regclass
          AND c.relname ~ '^spans_d[0-9]+$'
          AND (substr(c.relname, 8)::bigint + 1) * 86400000000000 <= cutoff
    LOOP
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %I)', part) INTO empty;
        IF empty THEN
            EXECUTE format('DROP TABLE %I', part);
            dropped := dropped + 1;
        END IF;
    END LOOP;
    RETURN dropped;
END
$fn$;
