-- Retention: daily edge counts before the cutoff day.
DELETE FROM edge_daily WHERE day < $cutoff_day;
