"""An Arrow table as PostgreSQL's COPY text, built column-wise in Arrow's compute kernels.

psycopg's `Copy.write_row` takes one Python tuple per row: for the writer's 512-span
group commits of 42 columns that was half the cost of a commit (about 50 µs a row,
measured), and the judge's steps register thousands of rows per table. Here every column
becomes its COPY text field with vectorized string kernels, the fields of a row are joined
by a tab in one kernel call, and only the final join of the row lines is Python's own
(`str.join`, in C).

The COPY text format (PostgreSQL docs, "COPY", "Text Format"): fields separated by a tab,
rows by a newline, NULL as `\\N`, and a backslash, tab, newline or carriage return inside
a field escaped with a backslash. A `text[]` field is an array literal, `{"a","b"}`, whose
elements are double-quoted with `"` and `\\` backslash-escaped — and then the whole literal
is escaped again as a field. Supported types: those of `statements.PG_TYPES`.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

NULL = "\\N"
_SPECIAL = "[\\\\\t\n\r]"
_FIELD_ESCAPES = (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r"))


def _field_escaped(text: pa.Array) -> pa.Array:
    # One scan to learn whether anything needs escaping (ids and names rarely do), rather
    # than four replacement passes over every column.
    if not pc.any(pc.match_substring_regex(text, _SPECIAL)).as_py():
        return text
    for plain, escaped in _FIELD_ESCAPES:
        text = pc.replace_substring(text, plain, escaped)
    return text


def _array_literal(lists: pa.Array) -> pa.Array:
    """`list<string>` -> PostgreSQL array literals (`{"a","b"}`, `{}`), NULL stays NULL."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    items = lists.values.slice(lists.offsets[0].as_py(), len(lists.values))
    quoted = pc.replace_substring(pc.replace_substring(items, "\\", "\\\\"), '"', '\\"')
    quoted = pc.binary_join_element_wise('"', quoted, '"', "")
    quoted = pc.fill_null(quoted, "NULL")  # a NULL element, unquoted
    offsets = pc.subtract(lists.offsets, lists.offsets[0])
    rebuilt = pa.ListArray.from_arrays(offsets, quoted, mask=lists.is_null())
    joined = pc.binary_join(rebuilt, ",")
    return pc.binary_join_element_wise("{", joined, "}", "")


def field_text(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One column as COPY text fields (escaped, NULL as `\\N`)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    if column.null_count == len(column):
        return pa.array([NULL] * len(column), pa.string())
    if pa.types.is_list(kind):
        text = _field_escaped(_array_literal(column))
    elif pa.types.is_boolean(kind):
        text = pc.if_else(column, "t", "f")
    elif pa.types.is_string(kind):
        text = _field_escaped(column)
    else:  # integers, dates: their text is already what PostgreSQL reads
        text = pc.cast(column, pa.string())
    return pc.fill_null(text, NULL)


def copy_text(table: pa.Table) -> bytes:
    """The whole table in COPY text format (an empty table gives no bytes)."""
    if table.num_rows == 0:
        return b""
    fields = [field_text(c) for c in table.columns]
    lines = pc.binary_join_element_wise(*fields, "\t") if len(fields) > 1 else fields[0]
    return ("\n".join(lines.to_pylist()) + "\n").encode("utf-8")
