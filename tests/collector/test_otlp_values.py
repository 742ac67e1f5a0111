"""Typed reads of OTLP values (collector/otlp/values.py): one reading for every caller."""

from __future__ import annotations

import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue

from handoffscope.collector.otlp.values import WRONG_TYPE, read_as, read_or_none
from handoffscope.instrumentation import semconv as sc

TEXT = AnyValue(string_value="triage")
NUMBER = AnyValue(int_value=0)
FLAG = AnyValue(bool_value=False)
TEXTS = AnyValue(array_value=ArrayValue(values=[TEXT, AnyValue(string_value="billing")]))
MIXED = AnyValue(array_value=ArrayValue(values=[TEXT, NUMBER]))


@pytest.mark.parametrize(
    ("type_", "value", "strict", "lenient"),
    [
        (sc.STR, TEXT, "triage", "triage"),
        (sc.STR, NUMBER, "", None),  # the strict read leaves "" for check_value to refuse
        (sc.INT, NUMBER, 0, 0),
        (sc.INT, FLAG, WRONG_TYPE, None),
        (sc.BOOL, FLAG, False, False),
        (sc.BOOL, NUMBER, WRONG_TYPE, None),
        (sc.STR_ARRAY, TEXTS, ["triage", "billing"], ["triage", "billing"]),
        (sc.STR_ARRAY, MIXED, WRONG_TYPE, None),
        (sc.STR_ARRAY, TEXT, WRONG_TYPE, None),
    ],
)
def test_strict_and_none_readings_agree(type_, value, strict, lenient) -> None:
    assert read_as(type_, value) == strict
    assert read_or_none(type_, value) == lenient


def test_an_absent_value_reads_as_none() -> None:
    assert read_or_none(sc.STR, None) is None
