-- One fact from meta (store_version, semconv_version, created_at).
SELECT value FROM meta WHERE key = $key;
