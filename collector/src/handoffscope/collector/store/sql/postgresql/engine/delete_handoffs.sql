-- Remove the previous versions of changed handoffs by row_seq (hs_doomed).
-- The explicit range lets row-group min/max skip everything but the row groups that can
-- hold those sequence numbers — usually only the newest, as handoffs change soon after
-- they start.
DELETE FROM handoffs
WHERE row_seq BETWEEN $lo AND $hi
  AND row_seq IN (SELECT row_seq FROM hs_doomed);
