-- A number for this group commit, unique across collectors (ddl/0006_judge_work.sql).
SELECT nextval('commit_seq');
