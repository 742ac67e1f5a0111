-- Count this collector among the judges of the store: the judge lease's key, held shared
-- by every judging collector for as long as its session lives (judge_members.sql counts
-- them; each takes its fair share of the partitions). A collector of an older version
-- takes the same key exclusively to judge alone: the two never judge at once.
SELECT pg_try_advisory_lock_shared(hashtext($name));
