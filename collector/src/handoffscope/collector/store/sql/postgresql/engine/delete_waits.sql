-- Remove previous versions of waits (changed, or decided and so no longer listed).
DELETE FROM waits
WHERE row_seq BETWEEN $lo AND $hi
  AND row_seq IN (SELECT row_seq FROM hs_doomed);
