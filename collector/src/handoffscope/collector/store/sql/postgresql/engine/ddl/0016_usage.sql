-- PostgreSQL engine step 16: the DuckDB engine's step 23 (engine/ddl/0023_usage.sql):
-- what the work cost, per handoff leg, run, loop, edge and day.
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS input_tokens bigint;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS output_tokens bigint;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS model_calls bigint;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS cost_usd double precision;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS model text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS input_tokens bigint;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS output_tokens bigint;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS model_calls bigint;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS cost_usd double precision;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS model text;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS unpriced_models text[];
ALTER TABLE runs ADD COLUMN IF NOT EXISTS burned_input_tokens bigint;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS burned_output_tokens bigint;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS burned_model_calls bigint;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS burned_cost_usd double precision;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS budget_remaining bigint;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS budget_total bigint;

ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS input_tokens bigint DEFAULT 0;
ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS output_tokens bigint DEFAULT 0;
ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS model_calls bigint DEFAULT 0;
ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS cost_nusd bigint DEFAULT 0;
ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS unpriced bigint DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS input_tokens bigint DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS output_tokens bigint DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS model_calls bigint DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS cost_nusd bigint DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS unpriced bigint DEFAULT 0;

CREATE TABLE IF NOT EXISTS run_daily (
    day                 bigint NOT NULL,
    service             text NOT NULL,
    verdict             text NOT NULL,
    runs                bigint NOT NULL,
    input_tokens        bigint NOT NULL,
    output_tokens       bigint NOT NULL,
    model_calls         bigint NOT NULL,
    cost_nusd           bigint NOT NULL,
    unpriced            bigint NOT NULL,
    burned_tokens       bigint NOT NULL,
    burned_cost_nusd    bigint NOT NULL,
    PRIMARY KEY (day, service, verdict)
);
INSERT INTO run_daily
SELECT
    first_seen_ns / 86400000000000,
    coalesce(service, ''),
    CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict
         WHEN flip1_ns IS NOT NULL THEN flip1_verdict ELSE verdict END,
    count(*), 0, 0, 0, 0, 0, 0, 0
FROM runs
GROUP BY 1, 2, 3
ON CONFLICT DO NOTHING;
