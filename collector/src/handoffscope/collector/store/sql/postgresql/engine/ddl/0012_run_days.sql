-- PostgreSQL engine step 12: run_days, how many runs were first seen per UTC day and
-- service, kept by triggers on runs: the runs list's total ("N of M") over a 30-day
-- window counted every run of the month through runs_first_seen, 1.0 s for 3M runs
-- (bench_scale_out.py's 10M-handoff history); whole days now come from here and only
-- the partial days at the window's ends are counted (query/runs.sql).
-- Triggers rather than the engine's own upserts: runs only ever change by INSERT (a
-- run's new version, the generator's history) and DELETE (its old version, retention),
-- so one statement-level trigger per operation, over its transition table, sees every
-- change, whoever makes it. DuckDB scans the column in milliseconds and has no
-- triggers; it needs no such table.
-- '' stands for a run without a service (NULL in runs), as in the other rollups.
CREATE TABLE run_days (
    day                     bigint NOT NULL,  -- first_seen_ns div 86400e9
    service                 text NOT NULL,
    runs                    bigint NOT NULL,
    PRIMARY KEY (day, service)
);

CREATE FUNCTION hs_run_days_added() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO run_days (day, service, runs)
    SELECT first_seen_ns / 86400000000000, coalesce(service, ''), count(*)
    FROM added
    GROUP BY 1, 2
    ON CONFLICT (day, service) DO UPDATE SET runs = run_days.runs + excluded.runs;
    RETURN NULL;
END
$fn$;

CREATE FUNCTION hs_run_days_removed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    WITH gone AS (
        SELECT first_seen_ns / 86400000000000 AS day, coalesce(service, '') AS service,
               count(*) AS runs
        FROM removed
        GROUP BY 1, 2
    )
    UPDATE run_days AS d
    SET runs = d.runs - gone.runs
    FROM gone
    WHERE d.day = gone.day AND d.service = gone.service;
    -- A day emptied by retention leaves no row behind.
    DELETE FROM run_days WHERE runs = 0;
    RETURN NULL;
END
$fn$;

-- Writers that started before this step keep writing while it runs; the lock holds them
-- off until the backfill and the triggers commit together, so no run is missed or
-- counted twice.
LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO run_days (day, service, runs)
SELECT first_seen_ns / 86400000000000, coalesce(service, ''), count(*)
FROM runs
GROUP BY 1, 2;

CREATE TRIGGER runs_days_added AFTER INSERT ON runs
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION hs_run_days_added();

CREATE TRIGGER runs_days_removed AFTER DELETE ON runs
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION hs_run_days_removed();
