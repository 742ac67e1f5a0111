-- Engine step 17: runs.unobserved — the union of its handoffs' unobserved boundaries.
ALTER TABLE runs ADD COLUMN unobserved VARCHAR[];
