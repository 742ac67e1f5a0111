-- Store step 3: attributes the allowlist removed, counted per service and attribute NAME.
-- Never a value: the value is exactly what must not be kept. Names themselves are
-- bounded by the allowlist (odd names are folded into one label, and the number of
-- distinct names is capped), so a hostile sender cannot grow this table without bound.
-- Tiny table, so a PRIMARY KEY is affordable here; it lets upsert_drops.sql add counts.
CREATE TABLE drops (
    service   VARCHAR NOT NULL,
    attribute VARCHAR NOT NULL,
    count     BIGINT NOT NULL,
    PRIMARY KEY (service, attribute)
);
