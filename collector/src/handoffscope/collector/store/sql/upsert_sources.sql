-- Add this group commit's spans per source (`new_sources`: service, scope, outcome, count,
-- seen_ns; summed per key already, as ON CONFLICT may see each key once per statement).
INSERT INTO sources BY NAME
SELECT service, scope, outcome, count, seen_ns AS first_seen_ns, seen_ns AS last_seen_ns
FROM new_sources
ON CONFLICT (service, scope, outcome) DO UPDATE SET
    count = sources.count + excluded.count,
    last_seen_ns = greatest(sources.last_seen_ns, excluded.last_seen_ns);
