-- Store step 6: handoff.unobserved: names of the boundaries the source cannot see.
-- A contract attribute added for real topologies (docs/semconv.md); ALTER TABLE appends
-- it, and semconv lists the added attributes last in the same order.
ALTER TABLE spans ADD COLUMN handoff_unobserved VARCHAR[];
