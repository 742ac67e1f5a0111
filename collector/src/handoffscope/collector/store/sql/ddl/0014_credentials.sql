-- Store step 14: credentials (docs/security.md). Each is a named bearer token of one kind —
-- ingest (send spans), read (query), admin (both, acknowledging, managing credentials) —
-- optionally scoped to services. Only the token's SHA-256 is kept (a token is 256 random
-- bits: a hash of it cannot be guessed back); the token itself is shown once, when made.
-- A revoked credential stays listed (revoked_ns set) and its name is never reused, so a
-- name in a log always means one token.
CREATE TABLE credentials (
    name        VARCHAR PRIMARY KEY,
    kind        VARCHAR NOT NULL,     -- ingest / read / admin
    services    VARCHAR[] NOT NULL,   -- service.name values it is scoped to; empty: all
    token_hash  VARCHAR NOT NULL UNIQUE,
    created_ns  BIGINT NOT NULL,
    revoked_ns  BIGINT
);
