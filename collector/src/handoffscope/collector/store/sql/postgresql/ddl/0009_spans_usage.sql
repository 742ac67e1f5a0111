-- PostgreSQL store step 9 (DuckDB store step 12, store/sql/ddl/0012_spans_usage.sql, which
-- says what each column holds): the usage of the leg a span ends. ALTER TABLE appends
-- them after commit_seq, so insert_spans.sql names its target columns.
ALTER TABLE spans ADD COLUMN gen_ai_usage_input_tokens bigint;
ALTER TABLE spans ADD COLUMN gen_ai_usage_output_tokens bigint;
ALTER TABLE spans ADD COLUMN usage_model_calls bigint;
ALTER TABLE spans ADD COLUMN gen_ai_request_model text;
