-- Retention: hourly edge counts before the cutoff hour.
DELETE FROM edge_hourly WHERE hour < $cutoff_hour;
