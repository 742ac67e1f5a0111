-- Engine step 18: services.first_outcome_ns — when the service first reported a verifier outcome; from then on its completed
-- runs are expected to be verified (a run that ended before stays unverified).
ALTER TABLE services ADD COLUMN first_outcome_ns BIGINT;
