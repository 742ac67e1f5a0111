-- The earliest verifier outcome of each service in a batch (hs_service_outcomes): from
-- that instant on, the service's completed runs are expected to be verified. Only ever
-- moves earlier, so re-sent or late spans cannot change it the wrong way.
INSERT INTO services BY NAME SELECT service, first_outcome_ns FROM hs_service_outcomes
ON CONFLICT DO UPDATE SET first_outcome_ns = least(
    coalesce(services.first_outcome_ns, excluded.first_outcome_ns), excluded.first_outcome_ns
);
