-- Engine step 13: handoffs.run_status — the run's status when the row was judged: an unadmitted destination of a run that
-- completed (or failed, or hit its limit) is judged without waiting out the grace.
ALTER TABLE handoffs ADD COLUMN run_status VARCHAR;
