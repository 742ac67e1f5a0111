-- This group commit's number on the judge's list, in the commit's own transaction.
INSERT INTO judge_work (commit_seq, spans, committed_ns) VALUES ($commit_seq, $spans, $now);
