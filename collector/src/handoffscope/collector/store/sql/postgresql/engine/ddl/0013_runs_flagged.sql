-- PostgreSQL engine step 13: the runs that claimed done without proof, and the runs that
-- looped, each by first seen. The False completions page and the Live board's "done
-- without proof" tile list and count the first over a window
-- (query/false_completions*.sql), the Loops page lists the second (query/loops.sql);
-- through runs_first_seen each read every run of the day to keep one in seven (one in
-- fifty): 120 ms and 58 ms for a day of 107k runs (EXPLAIN ANALYZE over
-- bench_scale_out.py's 10M-handoff history). A partial index holds only them.
CREATE INDEX runs_false_complete ON runs (first_seen_ns) WHERE false_complete;
CREATE INDEX runs_loop ON runs (first_seen_ns) WHERE loop;
