-- Store step 9: handoff.source — which instrumentation's spans the collector translated
-- this evidence from (docs/foreign-spans.md); NULL on the shim's own spans. ALTER TABLE
-- appends it, and semconv lists the added attributes last in the same order.
ALTER TABLE spans ADD COLUMN handoff_source VARCHAR;
