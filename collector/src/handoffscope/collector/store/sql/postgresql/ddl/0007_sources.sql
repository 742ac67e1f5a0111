-- PostgreSQL store step 7: spans per service, instrumentation scope and outcome, as in
-- the DuckDB file (store/sql/ddl/0010_sources.sql).
CREATE TABLE sources (
    service       text NOT NULL,
    scope         text NOT NULL,
    outcome       text NOT NULL,
    count         bigint NOT NULL,
    first_seen_ns bigint NOT NULL,
    last_seen_ns  bigint NOT NULL,
    PRIMARY KEY (service, scope, outcome)
);
