-- One fact from meta (store_version, semconv_version, the judge's state).
SELECT value FROM meta WHERE key = $key;
