-- A new credential (docs/security.md): its name, kind, services and the token's SHA-256;
-- a name already taken, even by a revoked one, meets the primary key (the caller says so).
INSERT INTO credentials (name, kind, services, token_hash, created_ns, revoked_ns)
VALUES ($name, $kind, $services, $token_hash, $now, NULL);
