"""handoffscope collector: OTLP in, allowlist, health engine, DuckDB file, query API.

One process owns one DuckDB file (DuckDB is single-writer across processes):

    receiver (OTLP/HTTP :4318, OTLP/gRPC :4317)
        -> processor.allowlist   (contract attributes only; drops counted)
        -> writer                (one thread, group commit, ack after commit)
        -> store.duckdb_store    (spans, drops, meta) + engine (derived verdicts)
    query API (/api/v1/*, /healthz, /metrics) on the OTLP/HTTP port, reading through cursors

Run it with `handoffscope collector --help` (or `python -m handoffscope.collector`).
"""
