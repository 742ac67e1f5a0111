-- When each service first reported an outcome (hs_service_outcomes): the earliest wins.
INSERT INTO services (service, first_outcome_ns)
SELECT service, first_outcome_ns FROM hs_service_outcomes
ON CONFLICT (service) DO UPDATE SET first_outcome_ns = least(
    coalesce(services.first_outcome_ns, excluded.first_outcome_ns), excluded.first_outcome_ns
);
