-- PostgreSQL engine step 18: the DuckDB engine's step 25 (engine/ddl/0025_turns.sql, which
-- says what each table holds): each run's turn, and the weekly review's turn rollups.
CREATE TABLE IF NOT EXISTS turns (
    run_id          text NOT NULL,
    run_key         bigint NOT NULL,
    conversation_id text,
    service         text,
    first_seen_ns   bigint NOT NULL,
    order_ns        bigint NOT NULL,
    start_agent     text,
    first_to_agent  text,
    final_agent     text,
    has_previous    boolean NOT NULL,
    previous_final  text
);
-- A step reads the turns of the conversations it touched, and replaces rows by run.
CREATE INDEX IF NOT EXISTS turns_run_key ON turns (run_key);
CREATE INDEX IF NOT EXISTS turns_conversation ON turns (conversation_id)
    WHERE conversation_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS turn_daily (
    day             bigint NOT NULL,
    service         text NOT NULL,
    start_agent     text NOT NULL,
    first_to_agent  text NOT NULL,
    previous_final  text NOT NULL,
    turns           bigint NOT NULL,
    PRIMARY KEY (day, service, start_agent, first_to_agent, previous_final)
);
CREATE TABLE IF NOT EXISTS turn_entries (
    service         text NOT NULL,
    agent           text NOT NULL,
    declared        bigint NOT NULL,
    firsts          bigint NOT NULL,
    PRIMARY KEY (service, agent)
);
INSERT INTO meta (key, value) VALUES ('turns_rebuild', '1')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
