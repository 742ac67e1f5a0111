-- PostgreSQL engine step 13: the runs that claimed done without proof, by first seen.
-- The False completions page and the Live board's "done without proof" tile list and
-- count them over a window (query/false_completions*.sql); through runs_first_seen that
-- read every run of the day and kept one in seven: 120 ms for a day of 107k runs
-- (EXPLAIN ANALYZE over bench_scale_out.py's 10M-handoff history). A partial index
-- holds only them.
CREATE INDEX runs_false_complete ON runs (first_seen_ns) WHERE false_complete;
