-- Every credential, revoked ones too, by name: what `handoffscope tokens list` and
-- GET /api/v1/tokens show (never a token, nor its hash).
SELECT name, kind, services, created_ns, revoked_ns
FROM credentials
ORDER BY name;
