-- Remove the previous versions of changed runs by row_seq; see delete_handoffs.sql.
DELETE FROM runs
WHERE row_seq BETWEEN $lo AND $hi
  AND row_seq IN (SELECT row_seq FROM hs_doomed);
