-- Store step 13: turns and services (docs/semconv.md, "Turns"; docs/a2a.md). The entry
-- agents a run's shim declared (names), and the A2A task a cross-service handoff became
-- with its latest state. ALTER TABLE appends them, and semconv lists the added
-- attributes last in the same order.
ALTER TABLE spans ADD COLUMN run_entry_agents VARCHAR[];
ALTER TABLE spans ADD COLUMN a2a_task_id VARCHAR;
ALTER TABLE spans ADD COLUMN a2a_task_state VARCHAR;
