-- The spans of each group commit after $after (oldest first, at most $limit commits):
-- what a judge starting on a backlog needs to size its steps (engine/judge.py). Commits
-- are appended in number order, so row-group min/max on commit_seq skips the judged ones.
SELECT commit_seq, count(*) AS spans
FROM spans
WHERE commit_seq > $after
GROUP BY commit_seq
ORDER BY commit_seq
LIMIT $limit;
