-- Retention: daily run counts and usage before the cutoff day (a day number, as edge_daily's).
DELETE FROM run_daily WHERE day < $cutoff_day;
