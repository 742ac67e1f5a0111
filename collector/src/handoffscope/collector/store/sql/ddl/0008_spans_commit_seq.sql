-- Store step 8: the group commit that stored each span (1, 2, 3, ... per file). The judge
-- reads the spans of the commits after its mark (`meta.judge_mark`) and judges them
-- behind the acknowledgement (collector/judge.py). Spans stored before this step are NULL:
-- the engine judged them inside their own commit.
ALTER TABLE spans ADD COLUMN commit_seq BIGINT;
