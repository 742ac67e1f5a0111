-- The oldest committed group commits not judged yet, up to $spans spans' worth (at least
-- one commit), for the collector holding the judge lease.
SELECT commit_seq, spans
FROM (
    SELECT commit_seq, spans, sum(spans) OVER (ORDER BY commit_seq) - spans AS before
    FROM judge_work
) AS w
WHERE before < $spans
ORDER BY commit_seq;
