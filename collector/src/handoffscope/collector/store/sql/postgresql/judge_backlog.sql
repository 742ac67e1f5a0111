-- What the judge has left, for /healthz and /metrics on any collector: commits, and the
-- commit time of the oldest (NULL when none).
SELECT count(*), min(committed_ns) FROM judge_work;
