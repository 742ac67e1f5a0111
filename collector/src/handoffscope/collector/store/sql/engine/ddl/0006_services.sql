-- Engine step 6: every service.name that sent a run, for the service filter.
-- Kept apart from runs so listing services never scans millions of runs.
CREATE TABLE services (
    service VARCHAR PRIMARY KEY
);
