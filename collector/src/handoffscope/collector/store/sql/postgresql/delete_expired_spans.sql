-- Retention: spans that ended before the cutoff ($cutoff, epoch ns) go, as in the DuckDB
-- file: the sender's end time, not the arrival. drop_empty_span_days.sql then drops the
-- day partitions this left empty.
WITH gone AS (DELETE FROM spans WHERE end_ns < $cutoff RETURNING 1)
SELECT count(*) FROM gone;
