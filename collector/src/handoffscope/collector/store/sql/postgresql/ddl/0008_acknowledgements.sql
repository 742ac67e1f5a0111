-- PostgreSQL store step 8 (DuckDB store step 11): operators' acknowledgements, as in the
-- DuckDB file (store/sql/ddl/0011_acknowledgements.sql, which says what each column holds).
CREATE TABLE acknowledgements (
    event       text NOT NULL,
    run_id      text NOT NULL,
    handoff_id  text,
    service     text,
    by_name     text NOT NULL,
    note        text NOT NULL,
    created_ns  bigint NOT NULL,
    until_ns    bigint NOT NULL,
    cleared_ns  bigint
);
CREATE INDEX acknowledgements_run ON acknowledgements (run_id);
