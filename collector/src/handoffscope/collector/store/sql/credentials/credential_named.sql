-- One credential by name (is the name taken; was it revoked, and when).
SELECT name, kind, services, created_ns, revoked_ns
FROM credentials
WHERE name = $name;
