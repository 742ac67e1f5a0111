-- Retention: hourly edge run lists before the cutoff hour.
DELETE FROM edge_runs WHERE hour < $cutoff_hour;
