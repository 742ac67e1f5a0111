"""Storage behind one package, so another backend can sit beside the DuckDB file.

- `statements`: every statement, asked for by name (the `.sql` files under `sql/`), and
  the one way to make Arrow tables visible to a statement (`registered`);
- `records`: the rows of the derived tables as records, the run key, the spans column rule
  — shapes every backend shares;
- `duckdb_store`: the DuckDB file itself (schema steps, bulk inserts, cursors for readers).
"""
