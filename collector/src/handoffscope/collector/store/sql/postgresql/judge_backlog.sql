-- What the judge has left, for /healthz and /metrics on any collector, and for the
-- holder's choice to let small commits gather (judge.GATHER_S): commits, the commit time
-- of the oldest (NULL when none), and their spans.
SELECT count(*), min(committed_ns), coalesce(sum(spans), 0) FROM judge_work;
