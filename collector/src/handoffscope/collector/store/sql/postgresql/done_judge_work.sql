-- The group commits just judged leave the list for the partitions judged ($parts), in the
-- transaction that wrote their verdicts.
DELETE FROM judge_work WHERE commit_seq = ANY($seqs::bigint[]) AND part = ANY($parts::smallint[]);
