-- Drop the day partitions retention has emptied (ddl/0005_span_days.sql).
SELECT hs_drop_empty_span_days($cutoff);
