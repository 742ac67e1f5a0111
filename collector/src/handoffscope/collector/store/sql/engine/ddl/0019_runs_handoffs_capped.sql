-- Engine step 19: runs.handoffs_capped — the run reached --max-handoffs-per-run and the
-- evidence of further handoffs was refused (counted on /metrics; spans stay stored).
ALTER TABLE runs ADD COLUMN handoffs_capped BOOLEAN;
