"""Turns of a conversation on the pages: Conversation, Run detail and Weekly review.

A real collector is fed real spans over OTLP/HTTP (`dashboard_support.seed`): one
conversation of a support desk, three turns, each run naming its start agent on its
`handoff.run` start span and carrying the conversation id (`gen_ai.conversation.id`), as
the shims do:

1. starts at triage, which hands to refund (the first turn: triage is learned as an entry
   agent);
2. starts at triage again, which hands straight back to refund — re-routed;
3. starts at billing, neither refund (where turn 2 ended) nor an entry agent — diverted.

The real app then reads that collector (Streamlit's AppTest, the router included). What a
careful reader expects: the conversation lists the three turns in order with where each
started and ended and how it followed; the re-routed run's detail says so in words and
links to its conversation; the weekly review counts the service's later turns, half
re-routed and half diverted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from dashboard_support import MINUTE_NS, SUPPORT, RunBuilder, open_page, seed, tables, texts
from dashboard_support import wait_visible as visible

from handoffscope.dashboard import layout
from handoffscope.instrumentation import semconv as sc

CONVERSATION = "conv-desk-42"
TURNS = ("run-turn-1", "run-turn-2-rerouted", "run-turn-3-diverted")


@dataclass
class Turn(RunBuilder):
    """A RunBuilder whose spans all carry the conversation id, and whose start names its agent."""

    def span(self, name: str, at_ns: int, attrs: dict[str, Any]) -> None:
        super().span(name, at_ns, {**attrs, sc.GEN_AI_CONVERSATION_ID: CONVERSATION})

    def starting_at(self, agent: str) -> Turn:
        self.span(
            sc.SPAN_RUN,
            self.start_ns,
            {sc.RUN_STATUS: sc.RUN_STATUS_STARTED, sc.GEN_AI_AGENT_NAME: agent},
        )
        return self


def _build(tracers: dict[str, Any], now_ns: int) -> None:
    def turn(i: int, start: str) -> Turn:
        return Turn(tracers[SUPPORT], TURNS[i], now_ns - (30 - 5 * i) * MINUTE_NS).starting_at(
            start
        )

    turn(0, "triage").handoff("triage", "refund", minute=0.5).ended(
        minute=1, status=sc.RUN_STATUS_COMPLETED
    )
    turn(1, "triage").handoff("triage", "refund", minute=0.5).ended(
        minute=1, status=sc.RUN_STATUS_COMPLETED
    )
    turn(2, "billing").ended(minute=1, status=sc.RUN_STATUS_COMPLETED)


@pytest.fixture(scope="module")
def turns_api(module_collector_factory: Any) -> str:
    proc = module_collector_factory()
    seed(proc.http_endpoint, build=_build, services=(SUPPORT,))
    visible(proc.http_endpoint, TURNS)
    return proc.http_endpoint


def _words(at: Any) -> str:
    """The page's text as read: bold and code-span marks dropped."""
    return texts(at).replace("**", "").replace("`", "")


def test_the_conversation_lists_its_turns_in_order(turns_api, monkeypatch) -> None:
    body = httpx.get(f"{turns_api}/api/v1/conversations/{CONVERSATION}", timeout=10).json()
    assert [r["continuity"] for r in body["runs"]] == [
        sc.CONTINUITY_FIRST,
        sc.CONTINUITY_REROUTED,
        sc.CONTINUITY_DIVERTED,
    ]
    at = open_page("conversation", monkeypatch, turns_api, query={"conversation_id": CONVERSATION})
    (turns,) = tables(at)
    assert list(turns["Turn"]) == [1, 2, 3]
    assert [layout.run_url(r) for r in TURNS] == list(turns["Run"])
    assert list(turns["Started at"]) == ["triage", "triage", "billing"]
    assert list(turns["Work with"]) == ["refund", "refund", "billing"]
    assert list(turns["Continuity"]) == ["First turn", "Re-routed", "Diverted"]
    page = texts(at)
    assert "2 turns of 2 later turns did not start with the agent that held the work" in page


def test_run_detail_says_a_turn_was_rerouted(turns_api, monkeypatch) -> None:
    at = open_page("run_detail", monkeypatch, turns_api, query={"run_id": TURNS[1]})
    page = _words(at)
    assert f"Turn 2 of conversation {CONVERSATION}" in page, page
    (link,) = at.get("page_link")
    assert link.proto.label.replace("`", "") == f"Open conversation {CONVERSATION}"
    assert link.proto.page.endswith("conversation")
    assert (
        "Re-routed: the previous turn ended with refund, and this one went back through "
        "triage only to be sent to refund again" in page
    ), page
    # The first turn is no re-route: its line says where it started, nothing more.
    first = _words(open_page("run_detail", monkeypatch, turns_api, query={"run_id": TURNS[0]}))
    assert "Re-routed" not in first and "work with refund · first turn" in first, first


def test_an_unknown_conversation_says_so(turns_api, monkeypatch) -> None:
    at = open_page("conversation", monkeypatch, turns_api, query={"conversation_id": "nope"})
    assert "The collector has no run of this conversation." in texts(at)
    assert not tables(at)


def test_weekly_review_counts_rerouted_and_diverted_turns(turns_api, monkeypatch) -> None:
    at = open_page("weekly_review", monkeypatch, turns_api)
    assert "How conversations continued" in texts(at)
    table = next(t for t in tables(at) if "Service" in t.columns)
    row = table[table["Service"] == SUPPORT].iloc[0]
    partial = next(c for c in table.columns if c.startswith("Re-routed · This week"))
    assert row[partial] == "50 % (1 of 2 turns)"
    diverted = next(c for c in table.columns if c.startswith("Diverted · This week"))
    assert row[diverted] == "50 % (1 of 2 turns)"
