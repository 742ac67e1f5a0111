-- GET /api/v1/services: every service that sent a run, for the service filter.
-- Reads the engine's small `services` table rather than scanning millions of runs.
SELECT service FROM services ORDER BY service;
