-- Every known service and when it first reported a verifier outcome (NULL: never).
SELECT service, first_outcome_ns FROM services;
