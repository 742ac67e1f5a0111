-- The spans of group commits ($lo, $hi], for the judge. commit_seq only grows with
-- insertion order; on PostgreSQL the spans_commit_seq index finds them.
SELECT *
FROM spans
WHERE commit_seq > $lo
  AND commit_seq <= $hi;
