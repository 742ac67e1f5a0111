-- Engine step 23: what the work cost (docs/semconv.md, "Usage"; engine/usage.py).
-- handoffs: the usage of the leg the handoff gave its destination, priced when judged.
-- runs: every leg summed, the models that could not be priced, and what a loop burned
-- (its legs from the first repeat on). NULL is "not reported", never 0.
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS input_tokens BIGINT;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS output_tokens BIGINT;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS model_calls BIGINT;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS cost_usd DOUBLE;
ALTER TABLE handoffs ADD COLUMN IF NOT EXISTS model VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS input_tokens BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS output_tokens BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS model_calls BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS cost_usd DOUBLE;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS model VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS unpriced_models VARCHAR[];
ALTER TABLE runs ADD COLUMN IF NOT EXISTS burned_input_tokens BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS burned_output_tokens BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS burned_model_calls BIGINT;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS burned_cost_usd DOUBLE;
-- handoff.budget.remaining of the run's latest request that stated it (Live's budget burn).
ALTER TABLE runs ADD COLUMN IF NOT EXISTS budget_remaining BIGINT;
-- ... and the budget that implies: the model calls up to that request plus what was left.
ALTER TABLE runs ADD COLUMN IF NOT EXISTS budget_total BIGINT;

-- The edge rollups (steps 7, 9) sum their handoffs' legs beside the count, with the same
-- +/- deltas. Money as integer nano-dollars: a float added and taken back drifts.
-- priced: handoffs whose leg had a price; unpriced: legs with usage but no price.
ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS input_tokens BIGINT DEFAULT 0;
ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS output_tokens BIGINT DEFAULT 0;
ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS model_calls BIGINT DEFAULT 0;
ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS cost_nusd BIGINT DEFAULT 0;
ALTER TABLE edge_hourly ADD COLUMN IF NOT EXISTS unpriced BIGINT DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS input_tokens BIGINT DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS output_tokens BIGINT DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS model_calls BIGINT DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS cost_nusd BIGINT DEFAULT 0;
ALTER TABLE edge_daily ADD COLUMN IF NOT EXISTS unpriced BIGINT DEFAULT 0;

-- Runs and their usage per UTC day (of first seen), service and the verdict the run's
-- timeline ends in — the weekly review's "what runs that ended in a loop cost" without
-- reading the runs. Kept exact with deltas as a run's bucket or figures change.
-- unpriced: runs with usage but no whole price; burned_*: their loops' share.
CREATE TABLE IF NOT EXISTS run_daily (
    day                 BIGINT NOT NULL,
    service             VARCHAR NOT NULL,
    verdict             VARCHAR NOT NULL,
    runs                BIGINT NOT NULL,
    input_tokens        BIGINT NOT NULL,
    output_tokens       BIGINT NOT NULL,
    model_calls         BIGINT NOT NULL,
    cost_nusd           BIGINT NOT NULL,
    unpriced            BIGINT NOT NULL,
    burned_tokens       BIGINT NOT NULL,
    burned_cost_nusd    BIGINT NOT NULL,
    PRIMARY KEY (day, service, verdict)
);
-- The runs stored before this step (no usage: their spans predate it). IF NOT EXISTS and
-- DO NOTHING: a store rewound to an earlier engine version applies the step again.
INSERT INTO run_daily
SELECT
    first_seen_ns // 86400000000000,
    coalesce(service, ''),
    CASE WHEN flip2_ns IS NOT NULL THEN flip2_verdict
         WHEN flip1_ns IS NOT NULL THEN flip1_verdict ELSE verdict END,
    count(*), 0, 0, 0, 0, 0, 0, 0
FROM runs
GROUP BY 1, 2, 3
ON CONFLICT DO NOTHING;
