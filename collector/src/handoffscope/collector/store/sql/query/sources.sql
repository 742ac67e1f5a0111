-- GET /api/v1/sources: spans received per service, instrumentation scope and outcome,
-- all time (the store's `sources` table); the API folds the outcomes of one (service,
-- scope) into one source with its advice. Most recently seen first.
SELECT service, scope, outcome, count, first_seen_ns, last_seen_ns
FROM sources
ORDER BY last_seen_ns DESC, service, scope, outcome;
