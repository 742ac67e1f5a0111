-- This group commit on the judge's list, once per partition ($partitions of them), in the
-- commit's own transaction.
INSERT INTO judge_work (commit_seq, spans, committed_ns, part)
SELECT $commit_seq, $spans, $now, p FROM generate_series(0, $partitions - 1) AS p;
