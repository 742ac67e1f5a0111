"""One verdict table (`semconv.VERDICT_TABLE`), one ladder (`verdicts.RULES`), and the docs
rendered from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.verdicts import RULES
from handoffscope.instrumentation.verdicts.docs import TABLES, markers, render

ROOT = Path(__file__).resolve().parents[2]
PLACES = {
    "architecture": "docs/architecture.md",
    "semconv": "docs/semconv.md",
    "readme": "README.md",
}


@pytest.mark.parametrize("name", TABLES)
def test_each_docs_table_is_the_rendered_one(name: str) -> None:
    text = (ROOT / PLACES[name]).read_text()
    begin, end = markers(name)
    assert text.count(begin) == 1 and text.count(end) == 1, f"{PLACES[name]}: markers"
    shown = text[text.index(begin) + len(begin) : text.index(end)].strip("\n") + "\n"
    assert shown == render(name), (
        f"{PLACES[name]} is out of date: paste "
        f"`python -m handoffscope.instrumentation.verdicts.docs {name}` between its markers"
    )


def test_the_table_numbers_the_failures_in_precedence_order() -> None:
    rules = [v.rule for v in sc.VERDICT_TABLE if v.rule is not None]
    assert rules == list(range(1, len(rules) + 1))
    assert sc.PRECEDENCE[: len(rules)] == sc.FAILURE_VERDICTS  # failures first, then the rest
    assert all(v.boundary is not None for v in sc.VERDICT_TABLE if v.rule is not None)
    assert all(v.label and v.next_step and v.fails_when for v in sc.VERDICT_TABLE)


def test_the_ladder_gives_every_handoff_verdict_in_precedence_order() -> None:
    given = [v for rule in RULES for v in rule.verdicts]
    # every verdict a handoff can have comes from exactly one rule (healthy: none failed)
    handoff_verdicts = set(sc.PRECEDENCE) - set(sc.RUN_ONLY_VERDICTS) - {sc.HEALTHY}
    assert sorted(given) == sorted(handoff_verdicts)
    # each rule's own verdict is worse than the next rule's
    firsts = [sc.RANK[rule.verdicts[0]] for rule in RULES]
    assert firsts == sorted(firsts)
    for rule in RULES:
        for v in rule.verdicts:
            if v in sc.VERDICT_BOUNDARY and v != sc.RUN_FAILED:
                assert sc.VERDICT_BOUNDARY[v] == rule.boundary, (v, rule.boundary)


def test_an_unknown_table_name_is_refused() -> None:
    with pytest.raises(ValueError, match="no verdict table named"):
        render("weekly")
