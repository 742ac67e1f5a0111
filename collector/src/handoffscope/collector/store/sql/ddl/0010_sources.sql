-- Store step 10: every span received, counted per service, instrumentation scope and what
-- became of it (`outcome`: `evidence` kept, `refused:<reason>`, `translated:<source>` read
-- by a translator), so GET /api/v1/sources can say which sender's spans are judged and
-- why the others are not. Scope names are the allowlist's bounded labels (odd names
-- folded, distinct pairs capped), so a hostile sender cannot grow it without bound.
-- Tiny table, so a PRIMARY KEY is affordable here; it lets upsert_sources.sql add counts.
CREATE TABLE sources (
    service       VARCHAR NOT NULL,
    scope         VARCHAR NOT NULL,
    outcome       VARCHAR NOT NULL,
    count         BIGINT NOT NULL,
    first_seen_ns BIGINT NOT NULL,
    last_seen_ns  BIGINT NOT NULL,
    PRIMARY KEY (service, scope, outcome)
);
