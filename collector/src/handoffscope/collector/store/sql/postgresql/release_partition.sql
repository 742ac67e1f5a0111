-- Give judge partition $part back (rebalancing, or a clean shutdown): try_partition.sql.
SELECT pg_advisory_unlock($lock::integer, $part::integer);
