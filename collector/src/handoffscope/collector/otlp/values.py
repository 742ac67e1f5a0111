"""Typed reads of OTLP attribute values (`AnyValue`), shared by the receiver, the allowlist
and the translators of other tools' spans.

A value is read by the type the contract expects, never through `MessageToDict`
(measured 10x slower): a string attribute reads `string_value` and nothing else, so a
value of the wrong type simply fails the check and is dropped. `read_as` is the strict
reading the allowlist's fast path is tested against; `read_or_none` is the same reading
for code that wants "absent or of another type" as None (the translators).
"""

from __future__ import annotations

from typing import Any

from handoffscope.instrumentation import semconv as sc

WRONG_TYPE = object()
"""Marker for "the value is not of the expected type" (check_value rejects it)."""


def _read_str(value) -> object:
    # An unset string_value reads as "", which check_value refuses anyway (empty
    # strings are not valid contract values), so no WhichOneof is needed here.
    return value.string_value


def _read_int(value) -> object:
    number = value.int_value
    if number == 0 and value.WhichOneof("value") != "int_value":
        return WRONG_TYPE
    return number


def _read_bool(value) -> object:
    flag = value.bool_value
    if not flag and value.WhichOneof("value") != "bool_value":
        return WRONG_TYPE
    return flag


def _read_str_array(value) -> object:
    if value.WhichOneof("value") != "array_value":
        return WRONG_TYPE
    items = []
    for item in value.array_value.values:
        if item.WhichOneof("value") != "string_value":
            return WRONG_TYPE
        items.append(item.string_value)
    return items


READERS = {sc.STR: _read_str, sc.INT: _read_int, sc.BOOL: _read_bool, sc.STR_ARRAY: _read_str_array}
"""semconv type -> function(AnyValue) returning the Python value or WRONG_TYPE."""


def read_as(type_: str, value) -> object:
    """Read an OTLP AnyValue as the contract type `type_` (WRONG_TYPE if it is not)."""
    return READERS[type_](value)


_ONEOF = {
    sc.STR: "string_value",
    sc.INT: "int_value",
    sc.BOOL: "bool_value",
    sc.STR_ARRAY: "array_value",
}


def read_or_none(type_: str, value) -> Any:
    """`value` (an AnyValue or None) as the contract type `type_`; None if it is absent
    or of another type (a string array with a non-string item included)."""
    if value is None or value.WhichOneof("value") != _ONEOF[type_]:
        return None
    read = READERS[type_](value)
    return None if read is WRONG_TYPE else read
