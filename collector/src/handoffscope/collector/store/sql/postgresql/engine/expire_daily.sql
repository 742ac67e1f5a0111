-- Retention: rollup days entirely before the cutoff day.
DELETE FROM handoff_daily WHERE day < $cutoff_day;
