-- Retention: daily edge run lists before the cutoff day.
DELETE FROM edge_runs_daily WHERE day < $cutoff_day;
