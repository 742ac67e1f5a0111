-- PostgreSQL store step 3: attributes the allowlist removed, counted per service and
-- attribute NAME (never a value), as in the DuckDB file (store/sql/ddl/0003_drops.sql).
CREATE TABLE drops (
    service   text NOT NULL,
    attribute text NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (service, attribute)
);
