-- Revoke one credential at $now (once: revoking it again changes nothing); returns the
-- name when a credential of that name was active.
UPDATE credentials SET revoked_ns = $now
WHERE name = $name AND revoked_ns IS NULL
RETURNING name;
