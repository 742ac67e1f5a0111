-- Store step 1: key/value facts about this file.
-- Holds `store_version` (the last numbered step of ddl/_order applied to this file) and
-- `semconv_version` (handoffscope.instrumentation.semconv.SCHEMA_VERSION it was written
-- with). The collector reads both before anything else; see docs/storage.md.
CREATE TABLE meta (
    key   VARCHAR PRIMARY KEY,
    value VARCHAR NOT NULL
);
