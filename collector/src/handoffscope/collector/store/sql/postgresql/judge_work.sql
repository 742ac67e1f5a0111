-- The oldest committed group commits not judged yet for any of the partitions this
-- collector's judge holds ($parts), up to $spans spans' worth (at least one commit), each
-- with the held partitions it is still listed for.
SELECT commit_seq, spans, parts
FROM (
    SELECT commit_seq, spans, parts, sum(spans) OVER (ORDER BY commit_seq) - spans AS before
    FROM (
        SELECT commit_seq, max(spans) AS spans, array_agg(part ORDER BY part) AS parts
        FROM judge_work
        WHERE part = ANY($parts::smallint[])
        GROUP BY commit_seq
    ) AS mine
) AS w
WHERE before < $spans
ORDER BY commit_seq;
