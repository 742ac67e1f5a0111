-- The spans of the group commits the judge took ($seqs), for the judge.
SELECT * FROM spans WHERE commit_seq = ANY($seqs::bigint[]);
