-- A clean shutdown: no longer one of the judges (join_judges.sql).
SELECT pg_advisory_unlock_shared(hashtext($name));
