-- Engine step 25: each run's turn, kept as its conversation changes (engine/turns.py), so
-- the weekly review counts turns by continuity from two small rollups instead of ordering
-- every run of every conversation at each request (5-6 s at ten million handoffs).
-- turns: one row per run — what its continuity is told from (docs/semconv.md, "Turns"):
-- its conversation, where it started and its first handoff went, where it ended (final
-- agent, else the current one), and of the run before it in its conversation: whether
-- there is one, and where it ended. Runs outside conversations have none. No key: rows
-- are replaced by run, a step's few at a time.
CREATE TABLE IF NOT EXISTS turns (
    run_id          VARCHAR NOT NULL,
    run_key         BIGINT NOT NULL,
    conversation_id VARCHAR,
    service         VARCHAR,
    first_seen_ns   BIGINT NOT NULL,
    order_ns        BIGINT NOT NULL,
    start_agent     VARCHAR,
    first_to_agent  VARCHAR,
    final_agent     VARCHAR,
    has_previous    BOOLEAN NOT NULL,
    previous_final  VARCHAR
);
-- The later turns (has_previous) per UTC day of first seen, service and the inputs of
-- hs_continuity but one (whether the start agent is an entry agent, known only when
-- asked: turn_entries). '' stands for NULL in the key.
CREATE TABLE IF NOT EXISTS turn_daily (
    day             BIGINT NOT NULL,
    service         VARCHAR NOT NULL,
    start_agent     VARCHAR NOT NULL,
    first_to_agent  VARCHAR NOT NULL,
    previous_final  VARCHAR NOT NULL,
    turns           BIGINT NOT NULL,
    PRIMARY KEY (day, service, start_agent, first_to_agent, previous_final)
);
-- Entry agents per service: runs declaring the agent (run.entry_agents), and first runs
-- of a conversation starting at it (learned). An agent is an entry agent while either
-- count is above 0.
CREATE TABLE IF NOT EXISTS turn_entries (
    service         VARCHAR NOT NULL,
    agent           VARCHAR NOT NULL,
    declared        BIGINT NOT NULL,
    firsts          BIGINT NOT NULL,
    PRIMARY KEY (service, agent)
);
-- The runs stored before this step are turned once, at the next start (engine/turns.py,
-- `rebuild_if_asked`): asked here, in the step's own transaction.
INSERT INTO meta (key, value) VALUES ('turns_rebuild', '1')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
