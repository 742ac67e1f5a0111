-- Engine step 12: handoffs.unobserved — boundaries the source cannot see for this handoff (they read not_observed).
ALTER TABLE handoffs ADD COLUMN unobserved VARCHAR[];
