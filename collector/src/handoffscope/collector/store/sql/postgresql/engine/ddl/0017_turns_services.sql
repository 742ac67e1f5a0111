-- PostgreSQL engine step 17: the DuckDB engine's step 24 (engine/ddl/0024_turns_services.sql,
-- which says what each column holds): turns and services.
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS task_id text;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS task_state text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS conversation_id text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS start_agent text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS first_to_agent text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS entry_agents text[] DEFAULT '{}';
-- A conversation's runs are read together (the conversation view, each run's previous).
CREATE INDEX IF NOT EXISTS runs_conversation ON runs (conversation_id)
    WHERE conversation_id IS NOT NULL;
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
-- hs_continuity, as the DuckDB macro (engine/ddl/0024_turns_services.sql says what it is).
CREATE OR REPLACE FUNCTION hs_continuity(
    has_previous boolean, previous_final text, start_agent text, first_to text,
    start_is_entry boolean
) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
    SELECT CASE
        WHEN NOT has_previous THEN 'first'
        WHEN start_agent IS NULL THEN NULL
        WHEN start_agent = previous_final THEN 'continued'
        WHEN start_is_entry AND first_to = previous_final THEN 'rerouted'
        WHEN start_is_entry THEN 'continued'
        WHEN previous_final IS NULL THEN NULL
        ELSE 'diverted'
    END
$fn$;
