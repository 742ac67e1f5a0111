-- The spans of group commits ($lo, $hi], for the judge. commit_seq only grows with
-- insertion order, so row-group min/max statistics skip everything older.
SELECT *
FROM spans
WHERE commit_seq > $lo
  AND commit_seq <= $hi;
