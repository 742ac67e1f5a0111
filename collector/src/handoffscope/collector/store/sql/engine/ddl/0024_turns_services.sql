-- Engine step 24: turns and services (docs/semconv.md, "Turns" and "Services (A2A)").
-- handoffs: the A2A task a cross-service handoff became, and its latest state (judged).
-- runs: what a conversation's continuity is computed from — its conversation, the agent
-- it started at, where its first handoff went, and the entry agents its shim declared.
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS task_id VARCHAR;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS task_state VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS conversation_id VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS start_agent VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS first_to_agent VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS entry_agents VARCHAR[];
-- No DEFAULT []: a default is an expression DuckDB binds again when it replays its WAL,
-- before its list functions are loaded (the file would not open after a crash).
UPDATE runs SET entry_agents = [] WHERE entry_agents IS NULL;
-- Runs judged before this step: their conversation from their stored spans, and the
-- first agent of their path as where they started (where their first handoff went is
-- not kept: such a run is never counted re-routed). IS NULL: a store rewound to an
-- earlier engine version applies the step again without redoing it.
UPDATE runs SET
    conversation_id = c.conversation_id,
    start_agent = coalesce(runs.start_agent, runs.path[1])
FROM (
    SELECT handoff_run_id AS run_id, min(gen_ai_conversation_id) AS conversation_id
    FROM spans
    WHERE gen_ai_conversation_id IS NOT NULL
    GROUP BY 1
) AS c
WHERE runs.run_id = c.run_id AND runs.conversation_id IS NULL;
-- A run's continuity in its conversation, from the run before it (docs/semconv.md,
-- "Turns"; the normative definition is verdicts/continuity.py, and a test holds the two
-- equal): `first`, `continued`, `rerouted`, `diverted`, or NULL when it cannot be told
-- (no start agent; or an agent that is no entry agent after a run with no final agent).
CREATE OR REPLACE MACRO hs_continuity(has_previous, previous_final, start_agent, first_to, start_is_entry) AS
    CASE
        WHEN NOT has_previous THEN 'first'
        WHEN start_agent IS NULL THEN NULL
        WHEN start_agent = previous_final THEN 'continued'
        WHEN start_is_entry AND first_to = previous_final THEN 'rerouted'
        WHEN start_is_entry THEN 'continued'
        WHEN previous_final IS NULL THEN NULL
        ELSE 'diverted'
    END;
