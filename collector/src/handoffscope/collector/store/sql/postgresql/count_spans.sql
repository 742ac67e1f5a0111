-- Rows stored; read once at start (for /healthz).
SELECT count(*) FROM spans;
