-- Every acknowledgement active at $now (until after now, not cleared), newest first: what
-- the API attaches to runs, loops and waits, the acknowledged counts and gauge, and
-- GET /api/v1/acknowledgements?active=true. Read whole: the rows are made by hand, a
-- handful at any time, so one small read beats widening every list query with a join.
SELECT event, run_id, handoff_id, service, by_name, note, created_ns, until_ns, cleared_ns
FROM acknowledgements
WHERE cleared_ns IS NULL
  AND until_ns > $now
ORDER BY created_ns DESC, run_id, event;
