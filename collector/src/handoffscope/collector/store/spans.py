"""The shapes of the rows the stores write, as Arrow sees them: `spans`, `drops`, `sources`.

One definition for both stores (the DuckDB file and PostgreSQL load the same Arrow tables)
and for the processor that builds span rows: `SPAN_SCHEMA` is the fixed columns plus ONE
typed column per contract attribute (`semconv.ATTRIBUTES`, '.' -> '_', `records.column_name`),
in the order of `sql/ddl/0002_spans.sql` and its later steps.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.compute as pc

from handoffscope.instrumentation import semconv as sc

from .records import column_name

ARROW_TYPES = {
    sc.STR: pa.string(),
    sc.INT: pa.int64(),
    sc.BOOL: pa.bool_(),
    sc.STR_ARRAY: pa.list_(pa.string()),
}

FIXED_COLUMNS: tuple[tuple[str, pa.DataType], ...] = (
    ("trace_id", pa.string()),
    ("span_id", pa.string()),
    ("name", pa.string()),
    ("service", pa.string()),
    ("start_ns", pa.int64()),
    ("end_ns", pa.int64()),
    ("received_ns", pa.int64()),
)
ATTRIBUTE_COLUMNS: dict[str, str] = {a: column_name(a) for a in sc.ATTRIBUTES}
"""Contract attribute -> spans column."""

SPAN_SCHEMA = pa.schema(
    [pa.field(n, t, nullable=False) for n, t in FIXED_COLUMNS]
    + [pa.field(ATTRIBUTE_COLUMNS[a], ARROW_TYPES[s.type]) for a, s in sc.ATTRIBUTES.items()]
)
"""Arrow schema of `spans` rows; `new_spans` handed to the engine has exactly this schema."""

DROPS_SCHEMA = pa.schema(
    [("service", pa.string()), ("attribute", pa.string()), ("count", pa.int64())]
)


SOURCES_SCHEMA = pa.schema(
    [
        ("service", pa.string()),
        ("scope", pa.string()),
        ("outcome", pa.string()),
        ("count", pa.int64()),
        ("seen_ns", pa.int64()),
    ]
)


def sources_table(sources: Mapping[tuple[str, str, str], int], seen_ns: int) -> pa.Table:
    """A group commit's spans per source, {(service, scope, outcome): count}, as rows."""
    keys = list(sources)
    return pa.Table.from_arrays(
        [
            pa.array([k[0] for k in keys], pa.string()),
            pa.array([k[1] for k in keys], pa.string()),
            pa.array([k[2] for k in keys], pa.string()),
            pa.array([sources[k] for k in keys], pa.int64()),
            pa.array([seen_ns] * len(keys), pa.int64()),
        ],
        schema=SOURCES_SCHEMA,
    )


def drops_table(drops: Mapping[tuple[str, str], int]) -> pa.Table:
    """A group commit's dropped-attribute counts, {(service, attribute): count}, as rows."""
    keys = list(drops)
    return pa.Table.from_arrays(
        [
            pa.array([service for service, _ in keys], pa.string()),
            pa.array([attribute for _, attribute in keys], pa.string()),
            pa.array([drops[k] for k in keys], pa.int64()),
        ],
        schema=DROPS_SCHEMA,
    )


def build_spans_table(columns: Mapping[str, list]) -> pa.Table:
    """One Arrow table from column lists keyed by SPAN_SCHEMA names."""
    arrays = []
    for f in SPAN_SCHEMA:
        values = columns[f.name]
        # Most attribute columns of an export are all None (a span kind sets a few of the
        # 44): `pa.nulls` makes one without converting each None (≈ 10% of the build).
        if f.nullable and values.count(None) == len(values):
            arrays.append(pa.nulls(len(values), f.type))
        else:
            arrays.append(pa.array(values, type=f.type))
    return pa.Table.from_arrays(arrays, schema=SPAN_SCHEMA)


def span_keys(table: pa.Table) -> pa.ChunkedArray:
    """One string per row naming the span: trace_id + span_id (both fixed-width hex)."""
    return pc.binary_join_element_wise(table.column("trace_id"), table.column("span_id"), "")
