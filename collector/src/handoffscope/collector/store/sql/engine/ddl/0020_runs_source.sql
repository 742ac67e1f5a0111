-- Engine step 20: runs.source — the instrumentation the run's evidence was translated
-- from (handoff.source; NULL for the shim's own spans), so a reader knows what it can show.
ALTER TABLE runs ADD COLUMN source VARCHAR;
