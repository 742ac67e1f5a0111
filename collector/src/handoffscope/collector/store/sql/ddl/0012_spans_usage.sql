-- Store step 12: usage — what the model did in the leg a span ends (the work one agent
-- does while it holds control; docs/semconv.md, "Usage"): tokens read and written, model
-- calls, and the model asked for. Counts and a name, never content. ALTER TABLE appends
-- them, and semconv lists the added attributes last in the same order.
ALTER TABLE spans ADD COLUMN gen_ai_usage_input_tokens BIGINT;
ALTER TABLE spans ADD COLUMN gen_ai_usage_output_tokens BIGINT;
ALTER TABLE spans ADD COLUMN usage_model_calls BIGINT;
ALTER TABLE spans ADD COLUMN gen_ai_request_model VARCHAR;
