-- Engine step 15: runs.unverified — completed with no verifier expected for its service and none reported.
ALTER TABLE runs ADD COLUMN unverified BOOLEAN;
