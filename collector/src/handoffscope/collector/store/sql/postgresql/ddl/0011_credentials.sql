-- PostgreSQL store step 11 (DuckDB store step 14, store/sql/ddl/0014_credentials.sql, which
-- says what each column holds): credentials, shared by every collector of the database.
CREATE TABLE credentials (
    name        text PRIMARY KEY,
    kind        text NOT NULL,
    services    text[] NOT NULL,
    token_hash  text NOT NULL UNIQUE,
    created_ns  bigint NOT NULL,
    revoked_ns  bigint
);
