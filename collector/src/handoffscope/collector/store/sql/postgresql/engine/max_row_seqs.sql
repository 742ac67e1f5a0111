-- Where each table's row_seq counter resumes after a restart.
SELECT
    (SELECT coalesce(max(row_seq), 0) FROM handoffs) AS handoffs,
    (SELECT coalesce(max(row_seq), 0) FROM runs) AS runs,
    (SELECT coalesce(max(row_seq), 0) FROM waits) AS waits;
