-- PostgreSQL store step 10 (DuckDB store step 13, store/sql/ddl/0013_spans_turns_services.sql,
-- which says what each column holds): turns and services. ALTER TABLE appends them after
-- commit_seq, so insert_spans.sql names its target columns.
ALTER TABLE spans ADD COLUMN run_entry_agents text[];
ALTER TABLE spans ADD COLUMN a2a_task_id text;
ALTER TABLE spans ADD COLUMN a2a_task_state text;
