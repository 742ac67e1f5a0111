-- The day partitions a group commit's spans need (`incoming_days`: day, registered by the
-- writer), created if absent; days older than $oldest_day stay in spans_old.
SELECT hs_ensure_span_day(day) FROM incoming_days WHERE day >= $oldest_day;
