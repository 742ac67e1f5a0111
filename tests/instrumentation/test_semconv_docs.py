"""Every name of the contract is documented in docs/semconv.md (and the doc names nothing unknown)."""

from __future__ import annotations

import re
from pathlib import Path

from handoffscope.instrumentation import semconv as sc

DOC = Path(__file__).resolve().parents[2] / "docs" / "semconv.md"


def _contract_strings() -> set[str]:
    names = set(sc.SPAN_NAMES) | set(sc.ATTRIBUTES) | set(sc.RESOURCE_ATTRIBUTES)
    names |= set(sc.PRECEDENCE) | set(sc.RUN_STATUSES) | set(sc.REJECTION_REASONS)
    names |= set(sc.WAIT_DECISIONS) | set(sc.OUTCOME_RESULTS) | set(sc.BOUNDARIES)
    names |= {sc.BOUNDARY_PROGRESS, sc.BOUNDARY_WAIT}
    names |= set(sc.NOTIFY_EVENTS)
    return names


def test_every_contract_name_is_documented() -> None:
    text = DOC.read_text()
    documented = set(re.findall(r"`([^`]+)`", text))
    missing = sorted(n for n in _contract_strings() if n not in documented)
    assert not missing, f"not documented in docs/semconv.md: {missing}"


def test_every_attribute_row_states_its_type() -> None:
    text = DOC.read_text()
    for name, spec in sc.ATTRIBUTES.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| `{name}`")), None)
        assert row is not None, f"{name} has no table row"
        assert f"`{spec.type}`" in row, f"{name}: row does not state type {spec.type}"


def test_documented_attributes_exist() -> None:
    text = DOC.read_text()
    rows = re.findall(r"^\| `([a-z_.]+)` \| `(?:str|int|bool|str\[\])`", text, re.M)
    assert rows, "attribute table not found"
    unknown = [r for r in rows if r not in sc.ATTRIBUTES and r not in sc.RESOURCE_ATTRIBUTES]
    assert not unknown, f"documented but not in semconv: {unknown}"


def test_precedence_matches_design_order() -> None:
    assert sc.PRECEDENCE[:11] == (
        "route_rejected",
        "stale_control",
        "open_tool_protocol",
        "context_incomplete",
        "contract_rejected",
        "destination_not_started",
        "loop",
        "false_complete",
        "approval_overdue",
        "wait_uncertain",
        "run_failed",
    )
    assert sc.PRECEDENCE[11:] == ("waiting_on_approval", "in_flight", "unverified", "healthy")
    assert sc.PRECEDENCE[:11] == sc.FAILURE_VERDICTS
    assert set(sc.VERDICT_LABELS) == set(sc.PRECEDENCE) == set(sc.NEXT_STEPS)


def _longest_accepted(spec: sc.AttributeSpec, limit: int = 1024) -> int:
    """The longest value of `spec` the allowlist keeps, found by asking `check_value`."""
    one = "a" if spec.type == sc.STR else ["a"]
    assert sc.check_value(spec, one) is not None, spec.name
    n = 1
    while n < limit:
        value = "a" * (n + 1) if spec.type == sc.STR else ["a" * (n + 1)]
        if sc.check_value(spec, value) is None:
            break
        n += 1
    return n


def test_every_bound_column_is_what_the_allowlist_enforces() -> None:
    """The bound column is read off `check_value` itself, not off the spec's fields: a
    code is cut at 64 characters by its pattern even where `max_len` says 128."""
    text = DOC.read_text()
    for name, spec in sc.ATTRIBUTES.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| `{name}`"))
        bound = [cell.strip() for cell in row.strip().strip("|").split("|")][4]
        if spec.type == sc.INT:
            assert sc.check_value(spec, 2**63 - 1) == 2**63 - 1
            assert sc.check_value(spec, 2**63) is None and sc.check_value(spec, True) is None
            if spec.minimum is not None:  # counts (usage): never negative
                assert sc.check_value(spec, spec.minimum) == spec.minimum
                assert sc.check_value(spec, spec.minimum - 1) is None
                assert bound == f"≥ {spec.minimum}, 64-bit", name
                continue
            assert sc.check_value(spec, -(2**63)) == -(2**63)
            assert bound == "64-bit", name
        elif spec.type == sc.BOOL:
            assert sc.check_value(spec, True) is True and sc.check_value(spec, 1) is None
            assert bound == "`true` / `false` only", name
        elif spec.values is not None:
            assert all(sc.check_value(spec, v) == v for v in spec.values), name
            assert sc.check_value(spec, "not-in-the-vocabulary") is None
            assert bound == f"≤ {spec.max_len} chars, closed vocabulary", name
        else:
            parts = [f"≤ {_longest_accepted(spec)} chars"]
            if spec.type == sc.STR_ARRAY:
                items = [["a"] * sc.MAX_ARRAY_ITEMS, ["a"] * (sc.MAX_ARRAY_ITEMS + 1)]
                assert [sc.check_value(spec, v) is not None for v in items] == [True, False]
                parts.append(f"≤ {sc.MAX_ARRAY_ITEMS} items")
            probe = ["two words"] if spec.type == sc.STR_ARRAY else "two words"
            code = sc.check_value(spec, probe) is None
            if spec.pattern is not None:  # model names: the pattern's characters only
                assert code and sc.check_value(spec, "openai/gpt-4.1-mini") is not None, name
                assert bound == f"{parts[0]}, `A-Z a-z 0-9 _ . : / @ + -`", name
                continue
            assert code == spec.code, name
            if code:
                parts.append("code")
            assert bound == ", ".join(parts), name
