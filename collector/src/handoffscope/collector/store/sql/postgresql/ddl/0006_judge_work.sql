-- PostgreSQL store step 6: the judge's work list, shared by every collector.
-- In one DuckDB file the commits are numbered 1, 2, 3 ... by the only writer, and the
-- judge's mark ("judged through commit N") says what is left. Several collectors commit
-- at once here: they number their group commits from one sequence, but a commit that
-- took number 7 may become visible after number 8 — a mark would skip it. So each group
-- commit also adds its number to judge_work in the same transaction, and the judge (one
-- collector at a time, holding the judge lease) takes the oldest visible numbers, judges
-- their spans and deletes the numbers in the transaction that writes the verdicts: each
-- commit is judged exactly once, whichever collector stored it and whichever judges it.
CREATE SEQUENCE commit_seq;
CREATE TABLE judge_work (
    commit_seq   bigint PRIMARY KEY,
    spans        integer NOT NULL,
    committed_ns bigint NOT NULL   -- the collector's clock at commit: the judge's lag
);
