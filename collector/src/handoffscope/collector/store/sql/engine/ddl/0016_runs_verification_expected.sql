-- Engine step 16: runs.verification_expected — whether a completed run must be verified (declared, collector flag, or the
-- service had reported an outcome by the time it ended): why false_complete applies.
ALTER TABLE runs ADD COLUMN verification_expected BOOLEAN;
