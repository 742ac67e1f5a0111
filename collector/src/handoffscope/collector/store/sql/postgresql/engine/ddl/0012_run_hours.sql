-- PostgreSQL engine step 12: run_hours, how many runs were first seen per UTC hour and
-- service, kept by triggers on runs: the runs list's total ("N of M") over a 30-day
-- window counted every run of the month through runs_first_seen, 1.0 s for 3M runs
-- (bench_scale_out.py's 10M-handoff history); whole hours now come from here and only
-- the partial hours at the window's ends are counted (query/runs.sql). Hours, not days:
-- a 24-hour window holds no whole UTC day, and counting its 108k runs took 40 ms.
-- Triggers rather than the engine's own upserts: runs only ever change by INSERT (a
-- run's new version, the generator's history) and DELETE (its old version, retention),
-- so one statement-level trigger per operation, over its transition table, sees every
-- change, whoever makes it. DuckDB scans the column in milliseconds and has no
-- triggers; it needs no such table.
-- '' stands for a run without a service (NULL in runs), as in the other rollups.
CREATE TABLE run_hours (
    hour                    bigint NOT NULL,  -- first_seen_ns div 3600e9
    service                 text NOT NULL,
    runs                    bigint NOT NULL,
    PRIMARY KEY (hour, service)
);

CREATE FUNCTION hs_run_hours_added() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    INSERT INTO run_hours (hour, service, runs)
    SELECT first_seen_ns / 3600000000000, coalesce(service, ''), count(*)
    FROM added
    GROUP BY 1, 2
    ON CONFLICT (hour, service) DO UPDATE SET runs = run_hours.runs + excluded.runs;
    RETURN NULL;
END
$fn$;

CREATE FUNCTION hs_run_hours_removed() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    UPDATE run_hours AS d
    SET runs = d.runs - gone.runs
    FROM (
        SELECT first_seen_ns / 3600000000000 AS hour, coalesce(service, '') AS service,
               count(*) AS runs
        FROM removed
        GROUP BY 1, 2
    ) AS gone
    WHERE d.hour = gone.hour AND d.service = gone.service;
    -- An hour emptied (a run's old version gone, retention) leaves no row behind; only
    -- the hours this statement touched are looked at.
    DELETE FROM run_hours AS d
    USING (
        SELECT DISTINCT first_seen_ns / 3600000000000 AS hour, coalesce(service, '') AS service
        FROM removed
    ) AS gone
    WHERE d.hour = gone.hour AND d.service = gone.service AND d.runs = 0;
    RETURN NULL;
END
$fn$;

-- Writers that started before this step keep writing while it runs; the lock holds them
-- off until the backfill and the triggers commit together, so no run is missed or
-- counted twice.
LOCK TABLE runs IN SHARE ROW EXCLUSIVE MODE;

INSERT INTO run_hours (hour, service, runs)
SELECT first_seen_ns / 3600000000000, coalesce(service, ''), count(*)
FROM runs
GROUP BY 1, 2;

CREATE TRIGGER runs_hours_added AFTER INSERT ON runs
    REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION hs_run_hours_added();

CREATE TRIGGER runs_hours_removed AFTER DELETE ON runs
    REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION hs_run_hours_removed();
