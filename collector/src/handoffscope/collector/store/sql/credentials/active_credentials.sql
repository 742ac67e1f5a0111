-- The credentials that admit a request now (not revoked), by token hash: what each
-- collector's auth reloads every few seconds, so a revocation needs no restart.
SELECT token_hash, name, kind, services
FROM credentials
WHERE revoked_ns IS NULL;
