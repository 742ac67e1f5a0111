-- Rows stored; read once at start, then the writer keeps the count (for /healthz).
SELECT count(*) FROM spans;
