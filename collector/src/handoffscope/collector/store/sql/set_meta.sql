-- Stamp one fact in meta, replacing the previous value.
INSERT OR REPLACE INTO meta (key, value) VALUES ($key, $value);
