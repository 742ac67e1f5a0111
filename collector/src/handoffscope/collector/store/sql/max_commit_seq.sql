-- The newest group commit in the file (0 for none): the writer numbers on from it.
SELECT coalesce(max(commit_seq), 0) FROM spans;
