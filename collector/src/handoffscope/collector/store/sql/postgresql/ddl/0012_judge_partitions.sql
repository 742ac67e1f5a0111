-- PostgreSQL store step 12: the judge's work list by partition. Runs fall into 16
-- partitions by run key (engine.PARTITIONS; 15 below is the last one's number), which
-- the collectors' judges share out (engine/leased_judge.py): each group commit is listed
-- once per partition, and the judge holding a partition deletes the commit's row for it
-- in the transaction that writes that partition's verdicts. A commit is judged once per
-- partition, by whichever collector holds it then; the rows left are what remains.
ALTER TABLE judge_work ADD COLUMN part smallint NOT NULL DEFAULT 0;
ALTER TABLE judge_work DROP CONSTRAINT judge_work_pkey;
INSERT INTO judge_work (commit_seq, spans, committed_ns, part)
SELECT commit_seq, spans, committed_ns, p FROM judge_work, generate_series(1, 15) AS p;
ALTER TABLE judge_work ADD PRIMARY KEY (commit_seq, part);
ALTER TABLE judge_work ALTER COLUMN part DROP DEFAULT;
