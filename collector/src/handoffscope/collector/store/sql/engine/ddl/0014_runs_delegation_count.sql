-- Engine step 14: runs.delegation_count — delegations are counted apart from handoffs (handoff_count).
ALTER TABLE runs ADD COLUMN delegation_count INTEGER;
