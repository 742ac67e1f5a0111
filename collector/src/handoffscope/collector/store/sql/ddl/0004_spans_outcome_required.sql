-- Store step 4: run.outcome_required: the run declared that its completion must be verified.
-- A contract attribute added for real topologies (docs/semconv.md); ALTER TABLE appends
-- it, and semconv lists the added attributes last in the same order.
ALTER TABLE spans ADD COLUMN run_outcome_required BOOLEAN;
