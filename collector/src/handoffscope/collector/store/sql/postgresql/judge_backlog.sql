-- What the judges have left, for /healthz and /metrics on any collector, and for a
-- judge's choice to let small commits gather (judge.GATHER_S): commits not judged for
-- every partition yet, the commit time of the oldest (NULL when none), and their spans.
SELECT count(*), min(committed_ns), coalesce(sum(spans), 0)
FROM (
    SELECT max(spans) AS spans, min(committed_ns) AS committed_ns
    FROM judge_work
    GROUP BY commit_seq
) AS w;
