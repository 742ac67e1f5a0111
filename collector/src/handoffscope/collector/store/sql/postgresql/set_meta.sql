-- Stamp one fact in meta, replacing the previous value.
INSERT INTO meta (key, value) VALUES ($key, $value)
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
