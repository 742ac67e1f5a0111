"""Storage behind one module (`duckdb_store`), so another backend can sit beside it."""
