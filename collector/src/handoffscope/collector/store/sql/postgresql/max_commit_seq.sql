-- The newest group commit stored (0 for none).
SELECT coalesce(max(commit_seq), 0) FROM spans;
