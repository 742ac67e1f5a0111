-- GET /api/v1/acknowledgements?active=false: the last $limit acknowledgements made,
-- active, expired and cleared alike, newest first.
SELECT event, run_id, handoff_id, service, by_name, note, created_ns, until_ns, cleared_ns
FROM acknowledgements
ORDER BY created_ns DESC, run_id, event
LIMIT $limit;
