-- PostgreSQL store step 1: key/value facts about this database, as in the DuckDB file
-- (`store_version`, `semconv_version`, the judge's state). See docs/storage.md.
CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
