"""Run detail states what happened, and keeps the rule's definition one click away.

A ping-pong run's page used to print the loop rule's three-clause definition on every
looping handoff and in the header, and never said which cycle, which agents, how many
handoffs were burned or how the run ended. These tests hold the page to the facts of each
unhealthy run, against a real collector fed real spans (`dashboard_support.build_scenario`
plus a handoff whose destination lacks a required key): the story names them, and the
definition (docs/architecture.md, Verdicts) appears once, inside a collapsed expander.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from dashboard_support import (
    CHROMIUM_ARGS,
    MINUTE_NS,
    OWNER_OVERDUE,
    PAGE_SECONDS,
    RUN_FALSE_COMPLETE,
    RUN_LOOP,
    RUN_OVERDUE,
    RUN_ROUTE,
    RUN_STALE,
    RUN_UNCERTAIN,
    SUPPORT,
    RunBuilder,
    build_scenario,
    open_page,
    settle,
    shot_dir,
    tables,
    texts,
)

from handoffscope.dashboard import run_sections
from handoffscope.instrumentation import semconv as sc

RUN_MISSING = "run-story-missing-key"
MISSING_KEY = "customer_tier"
LOOP_RULE_TEXT = "same destination, task and no new work"
"""Words of the loop rule, in its definition and in the classifier's loop `why` alike,
which the page used to repeat on every looping handoff and in its header."""


def _build(tracers: dict[str, Any], now_ns: int) -> None:
    build_scenario(tracers, now_ns)
    run = RunBuilder(tracers[SUPPORT], RUN_MISSING, now_ns - 6 * MINUTE_NS).started()
    run.handoff("triage", "billing", minute=0.1, admitted=False)
    run.span(
        sc.SPAN_ACCEPT,
        run.start_ns + MINUTE_NS // 5,
        {sc.HANDOFF_ID: "h1", sc.DESTINATION_STARTED: True,
         sc.CONTEXT_MISSING_KEYS: [MISSING_KEY]},
    )  # fmt: skip


@pytest.fixture(scope="module")
def story_api(module_collector_factory: Any) -> str:
    from dashboard_support import BILLING, seed, wait_visible

    proc = module_collector_factory()
    seed(proc.http_endpoint, build=_build, services=(BILLING, SUPPORT))
    wait_visible(proc.http_endpoint, (RUN_LOOP, RUN_MISSING))
    return proc.http_endpoint


def _api_run(api: str, run_id: str) -> dict[str, Any]:
    import httpx

    return httpx.get(f"{api}/api/v1/runs/{run_id}", timeout=10).json()


def _words(at: Any) -> str:
    """The page's text with values' code-span marks dropped (every wire value is shown as
    inert code: `style.md`), so assertions read as the sentence does."""
    return texts(at).replace("`", "")


def _rule(verdict: str) -> str:
    """The rule's words as `_words` reads them."""
    return run_sections.RULES[verdict][1].replace("`", "")


def _expanders(at: Any) -> list[Any]:
    """The page's "Why is this …?" expanders (other expanders: filters, acknowledgement)."""
    return [e for e in at.expander if str(e.label).startswith("Why is this")]


def test_the_rule_shown_is_the_verdict_tables() -> None:
    """The definition the page shows is the one verdict table's (the docs render theirs
    from the same rows: tests/instrumentation/test_verdict_table.py)."""
    assert set(run_sections.RULES) == set(sc.FAILURE_VERDICTS)
    for v in sc.VERDICT_TABLE:
        if v.rule is not None:
            assert run_sections.RULES[v.name] == (v.rule, v.fails_when)
            assert f"Rule {v.rule} of 11" in (run_sections.definition(v.name) or "")


def test_a_ping_pong_run_states_cycle_agents_turns_and_ending(story_api, monkeypatch) -> None:
    body = _api_run(story_api, RUN_LOOP)
    assert body["verdict"] == sc.LOOP and body["status"] == sc.RUN_STATUS_MAX_TURNS
    at = open_page("run_detail", monkeypatch, story_api, query={"run_id": RUN_LOOP})
    page = _words(at)
    cycle = " → ".join(body["loop_cycle"])
    first = body["first_failure"]
    # The cycle, how many times, the agents in it.
    assert f"the cycle **{cycle}** repeated {body['loop_repeats']} times" in page, page
    assert "agents in it: **triage**, **billing**" in page
    # When it started looping (the first looping handoff), the handoffs burned from there
    # to the end of the run, and the run's turns.
    burned = body["handoffs_total"] - first["seq"] + 1
    assert f"started looping at handoff **#{first['seq']} billing → triage**" in page
    assert f"{burned} handoffs of {body['handoffs_total']} were burned in the loop" in page
    assert (
        f"How it ended: it was **stopped at its turn limit**; {body['turns']} turns burned in all."
        in page
    )
    # Each looping handoff says what it repeats, not the rule.
    handoffs = tables(at)[0]
    why = dict(zip(handoffs["#"], handoffs["Why"], strict=True))
    assert why[2] == "closes the cycle triage → billing → triage with no new work (state v1)"
    assert why[3] == "repeats #1: the same task went to billing again with no new work (state v1)"
    # The rule: once, in a collapsed expander titled with the question.
    (rule,) = _expanders(at)
    assert rule.label == "Why is this “Loop”?"
    assert page.count(LOOP_RULE_TEXT) == 1, page
    assert LOOP_RULE_TEXT in " ".join(m.value for m in rule.markdown)
    # Real durations: admission 100 ms after each request (the seed's accept spans), and
    # the legs between requests (a minute apart in the seed).
    assert set(handoffs["Admitted after"]) == {"100 ms"}
    assert list(handoffs["Held for"])[:2] == ["1 min", "1 min"]


def test_a_missing_key_is_named_with_what_was_required(story_api, monkeypatch) -> None:
    at = open_page("run_detail", monkeypatch, story_api, query={"run_id": RUN_MISSING})
    page = _words(at)
    assert f"**billing** was handed the work without **{MISSING_KEY}**" in page, page
    assert "(required: account_id)" in page
    (rule,) = _expanders(at)
    assert rule.label == f"Why is this “{sc.VERDICT_LABELS[sc.CONTEXT_INCOMPLETE]}”?"
    assert page.count(_rule(sc.CONTEXT_INCOMPLETE)) == 1


def test_a_refusal_states_its_reason_and_a_route_its_edge(story_api, monkeypatch) -> None:
    at = open_page("run_detail", monkeypatch, story_api, query={"run_id": RUN_STALE})
    page = _words(at)
    assert "**billing** refused it as **stale contract** (reason stale)" in page, page
    assert "How it ended: it **ended failed** after 1 turn." in page
    assert page.count(_rule(sc.CONTRACT_REJECTED)) == 1

    at = open_page("run_detail", monkeypatch, story_api, query={"run_id": RUN_ROUTE})
    page = _words(at)
    assert "Handoff **#1** triage → refunds" in page and "refunds is not a declared edge" in page
    assert "Now: it is **still running**." in page
    (rule,) = _expanders(at)
    assert rule.label == f"Why is this “{sc.VERDICT_LABELS[sc.ROUTE_REJECTED]}”?"


def test_a_false_completion_says_no_verifier_passed(story_api, monkeypatch) -> None:
    at = open_page("run_detail", monkeypatch, story_api, query={"run_id": RUN_FALSE_COMPLETE})
    page = _words(at)
    assert "claimed done without a passing verifier" in page
    assert "How it ended: it **ended completed** after 1 turn." in page
    assert page.count(_rule(sc.FALSE_COMPLETE)) == 1


@pytest.mark.parametrize(
    ("run_id", "verdict", "fact"),
    [
        (RUN_OVERDUE, sc.APPROVAL_OVERDUE, f"deadline passed; {OWNER_OVERDUE} has not decided"),
        (RUN_UNCERTAIN, sc.WAIT_UNCERTAIN, "the wait lacks owner"),
    ],
)
def test_a_wait_names_who_and_what_is_missing(story_api, monkeypatch, run_id, verdict, fact):
    at = open_page("run_detail", monkeypatch, story_api, query={"run_id": run_id})
    page = _words(at)
    assert "Handoff **#1** billing → approver, requested " in page, page
    assert fact in page
    assert page.count(_rule(verdict)) == 1
    (rule,) = _expanders(at)
    assert rule.label == f"Why is this “{sc.VERDICT_LABELS[verdict]}”?"


# --- the same page in real Chromium ------------------------------------------------------


@pytest.mark.browser
def test_ping_pong_run_page_in_chromium(
    story_api: str, module_dashboard_factory: Any, chromium_path: str
) -> None:
    from playwright.sync_api import sync_playwright

    body = _api_run(story_api, RUN_LOOP)
    cycle = " → ".join(body["loop_cycle"])
    dashboard = module_dashboard_factory(story_api)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(f"{dashboard}/run_detail?run_id={RUN_LOOP}")
            settle(page)
            page.get_by_text("Loop evidence:").wait_for(timeout=PAGE_SECONDS * 1000)
            main = page.locator('[data-testid="stMain"]').inner_text()
            assert f"the cycle {cycle} repeated {body['loop_repeats']} times" in main, main
            assert "agents in it: triage, billing" in main
            assert f"stopped at its turn limit; {body['turns']} turns burned in all" in main
            # The definition: in the DOM once, inside its expander, which is closed.
            details = page.locator('[data-testid="stExpander"] details').filter(
                has_text="Why is this"
            )
            assert details.count() == 1
            assert details.get_attribute("open") is None
            assert page.get_by_text(re.compile(LOOP_RULE_TEXT)).count() == 1
            assert not page.get_by_text(re.compile(LOOP_RULE_TEXT)).is_visible()
            page.screenshot(path=str(shot_dir() / "run_detail_ping_pong.png"))
            page.get_by_text("Why is this “Loop”?").click()
            page.get_by_text(re.compile(LOOP_RULE_TEXT)).wait_for(
                state="visible", timeout=PAGE_SECONDS * 1000
            )
            page.screenshot(path=str(shot_dir() / "run_detail_ping_pong_rule_open.png"))
        finally:
            browser.close()
