-- Store step 5: handoff.kind: 'handoff' or 'delegation' (an agent called as a tool).
-- A contract attribute added for real topologies (docs/semconv.md); ALTER TABLE appends
-- it, and semconv lists the added attributes last in the same order.
ALTER TABLE spans ADD COLUMN handoff_kind VARCHAR;
