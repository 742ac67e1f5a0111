"""What a failure cost, on the pages where it is decided: Run detail, Loops, Control flow.

A real collector is fed real spans over OTLP/HTTP (`dashboard_support.seed`) whose legs report
usage the way a shim does: each agent's tokens, model calls and model on the span that ends
its leg — the `handoff.request` it sends, or the run's closing `handoff.run` (docs/semconv.md,
Usage). Three triage ⇄ billing loops burn different amounts: a big and a small one on
`gpt-4o`, and one on a model no price table knows, with the most tokens of all; a healthy
run on `gpt-4.1-mini`; and a healthy run that reported no usage at all. The real app then
reads that collector (Streamlit's AppTest, the router included).

What a careful reader expects: a run's cost line adds up its legs; each handoff's leg cost
is the leg its destination worked; a loop's burn is its legs from the first repeat on; an
unknown model is "not priced" and named, never $0; no usage reads "not reported" / "—",
never 0; the Loops page lists the most expensive loop first, priced ones before unpriced
ones. Dollars are expected from the collector's own price book
(`handoffscope.collector.prices.PriceBook`, genai-prices' table), which knows gpt-4o and
gpt-4.1-mini and not acme-llm-9.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from dashboard_support import (
    BILLING,
    MINUTE_NS,
    RunBuilder,
    open_page,
    seed,
    tables,
    texts,
    wait_visible,
)

from handoffscope.dashboard import cost, style
from handoffscope.instrumentation import semconv as sc

PRICED = "gpt-4o"
PRICED_SMALL = "gpt-4.1-mini"
UNKNOWN = "acme-llm-9"
RUN_BIG = "run-cost-big-loop"
RUN_SMALL = "run-cost-small-loop"
RUN_ODD = "run-cost-unpriced-loop"
RUN_FINE = "run-cost-healthy"
RUN_SILENT = "run-cost-no-usage"
RUN_REFUSED = "run-cost-refused-last-week"
RUN_BUDGET = "run-cost-budget-in-flight"
LEG = {
    RUN_BIG: (2000, 200),
    RUN_SMALL: (100, 10),
    RUN_ODD: (50_000, 5000),
    RUN_FINE: (800, 80),
    RUN_REFUSED: (300, 30),
    RUN_BUDGET: (400, 40),
}
MODEL = {
    RUN_BIG: PRICED,
    RUN_SMALL: PRICED,
    RUN_ODD: UNKNOWN,
    RUN_FINE: PRICED_SMALL,
    RUN_REFUSED: PRICED,
    RUN_BUDGET: PRICED,
}


@dataclass
class CostlyRun(RunBuilder):
    """A RunBuilder whose agents report one model call per leg: on each request they send
    and on the run's closing span (the span that ends the leg)."""

    leg: tuple[int, int] | None = None
    model: str = ""
    closes: list[str] = field(default_factory=lambda: [sc.SPAN_REQUEST])

    def span(self, name: str, at_ns: int, attrs: dict[str, Any]) -> None:
        ending = sc.RUN_STATUS in attrs and attrs[sc.RUN_STATUS] != sc.RUN_STATUS_STARTED
        if self.leg is not None and (name == sc.SPAN_REQUEST or ending):
            attrs = {
                **attrs,
                sc.GEN_AI_USAGE_INPUT_TOKENS: self.leg[0],
                sc.GEN_AI_USAGE_OUTPUT_TOKENS: self.leg[1],
                sc.USAGE_MODEL_CALLS: 1,
                sc.GEN_AI_REQUEST_MODEL: self.model,
            }
        super().span(name, at_ns, attrs)


def _build(tracers: dict[str, Any], now_ns: int) -> None:
    def run(run_id: str, minutes_ago: float) -> CostlyRun:
        leg = LEG.get(run_id)
        return CostlyRun(
            tracers[BILLING],
            run_id,
            now_ns - int(minutes_ago * MINUTE_NS),
            leg=leg,
            model=MODEL.get(run_id, ""),
        ).started()

    # The newest loop burns least: "most recent first" and "most expensive first" differ.
    for run_id, ago, hops in ((RUN_BIG, 30, 5), (RUN_ODD, 25, 5), (RUN_SMALL, 20, 3)):
        loop = run(run_id, ago)
        for i in range(hops):
            frm, to = ("triage", "billing") if i % 2 == 0 else ("billing", "triage")
            loop.handoff(frm, to, minute=0.5 + i)
        loop.ended(minute=hops + 1, status=sc.RUN_STATUS_MAX_TURNS)
    # Last ISO week: one run its destination refused (a contract rejection), two legs.
    run(RUN_REFUSED, 7 * 24 * 60).handoff(
        "triage", "billing", minute=0.5, rejection=sc.REJECTION_INVALID
    ).ended(minute=1, status=sc.RUN_STATUS_FAILED)
    # Still running, its app states a call budget on each request: 10 calls left at the
    # first, 4 at the second (budget burn on Live).
    budget = run(RUN_BUDGET, 3)
    budget.handoff("triage", "billing", minute=0.2)
    budget.handoff("billing", "refunds", minute=0.4)
    for i, left in enumerate((10, 4), start=1):
        RunBuilder.span(  # the budget alone: the leg's usage is on the request already
            budget,
            sc.SPAN_REQUEST,
            budget.start_ns + int((0.2 * i) * MINUTE_NS) + 1,
            {sc.HANDOFF_ID: f"h{i}", sc.BUDGET_REMAINING: left},
        )
    for run_id, ago in ((RUN_FINE, 15), (RUN_SILENT, 10)):
        run(run_id, ago).handoff("triage", "billing", minute=0.5).outcome(
            minute=1, result=sc.OUTCOME_PASS
        ).ended(minute=1.5, status=sc.RUN_STATUS_COMPLETED)


def _price(model: str, tokens_in: int, tokens_out: int) -> float | None:
    """What the collector's price book says one call costs; None for a model it does not
    know."""
    from handoffscope.collector.prices import PriceBook

    return PriceBook.load().cost(model, tokens_in, tokens_out)


def _expected_usd(run_id: str, legs: int) -> float | None:
    one = _price(MODEL[run_id], *LEG[run_id])
    return None if one is None else one * legs


@pytest.fixture(scope="module")
def cost_api(module_collector_factory: Any) -> str:
    proc = module_collector_factory()
    seed(proc.http_endpoint, build=_build, services=(BILLING,))
    wait_visible(
        proc.http_endpoint,
        (RUN_BIG, RUN_SMALL, RUN_ODD, RUN_FINE, RUN_SILENT, RUN_REFUSED, RUN_BUDGET),
    )
    return proc.http_endpoint


def _api(api: str, path: str) -> dict[str, Any]:
    return httpx.get(f"{api}/api/v1/{path}", params={"since": 0}, timeout=10).json()


def _words(at: Any) -> str:
    """The page's text as read: code-span marks and the escapes of dollar signs dropped."""
    return texts(at).replace("`", "").replace("\\$", "$")


def test_money_and_tokens_never_show_a_null_as_zero() -> None:
    assert cost.money(0.0123) == "$0.0123"
    assert cost.money(0.000045) == "$0.0000450"
    assert cost.money(12.345) == "$12.35"
    assert cost.money(None) == "not priced"
    assert cost.tokens(12345) == "12,345"
    assert cost.tokens(None) == "—"
    assert cost.cell(None) == "—"
    assert cost.line(None) == "not reported"
    unpriced = {"input_tokens": 10, "output_tokens": 2, "model_calls": 1, "cost_usd": None,
                "unpriced_models": [UNKNOWN]}  # fmt: skip
    assert cost.cell(unpriced) == "12 tokens · not priced"
    # A sum over many prices what it can and counts the rest: its 0 alone is no price.
    assert cost.price({"cost_usd": 0.0, "unpriced": 3}) == "not priced"
    assert cost.price({"cost_usd": 0.02, "unpriced": 3}) == "$0.0200 + 3 not priced"
    assert cost.inert("$1 and $2") == "\\$1 and \\$2"  # not a formula in Markdown
    assert cost.line(unpriced) == f"10 tokens in, 2 out, 1 model call, not priced: {UNKNOWN}"
    # Most expensive first: priced by dollars, unpriced after them by tokens, silent last.
    keys = {
        "cheap": cost.sort_key({"cost_usd": 0.01}, 10),
        "dear": cost.sort_key({"cost_usd": 1.0}, 5),
        "unpriced": cost.sort_key({"cost_usd": None}, 10_000),
        "silent": cost.sort_key(None, None),
    }
    assert sorted(keys, key=keys.__getitem__) == ["dear", "cheap", "unpriced", "silent"]


def test_run_detail_states_what_the_run_and_its_loop_cost(cost_api, monkeypatch) -> None:
    body = _api(cost_api, f"runs/{RUN_BIG}")
    assert body["verdict"] == sc.LOOP
    tin, tout = LEG[RUN_BIG]
    legs = body["handoffs_total"] + 1  # the first agent's leg, then one per handoff
    usage = body["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["model_calls"]) == (
        legs * tin,
        legs * tout,
        legs,
    )
    # The loop burned its legs from the first repeat (the first looping handoff) on.
    burned_legs = body["handoffs_total"] - body["first_failure"]["seq"] + 1
    loop = body["loop_usage"]
    assert cost.total_tokens(loop) == burned_legs * (tin + tout)
    usd = _expected_usd(RUN_BIG, legs)
    assert usd is not None and usage["cost_usd"] == pytest.approx(usd)

    at = open_page("run_detail", monkeypatch, cost_api, query={"run_id": RUN_BIG})
    page = _words(at)
    money = cost.money(usd)
    assert (
        f"Cost: {legs * tin:,} tokens in, {legs * tout:,} out, {legs} model calls, {money}"
        in page.replace("**", "")
    ), page
    burned_money = cost.money(_expected_usd(RUN_BIG, burned_legs))
    assert (
        f"the loop burned {burned_legs * (tin + tout):,} tokens ({burned_money}) "
        "after its first repeat" in page
    ), page
    # Each handoff's leg: the one call its destination made with the work.
    handoffs = tables(at)[0]
    one = _expected_usd(RUN_BIG, 1)
    assert set(handoffs["Leg cost"]) == {f"{tin + tout:,} tokens · {cost.money(one)}"}


def test_an_unknown_model_is_not_priced_and_named(cost_api, monkeypatch) -> None:
    at = open_page("run_detail", monkeypatch, cost_api, query={"run_id": RUN_ODD})
    page = _words(at).replace("**", "")
    assert "not priced: " in page and UNKNOWN in page, page
    assert "$0" not in page
    cost_line = next(m for m in at.markdown if "Cost:" in m.value)
    assert UNKNOWN in cost_line.proto.help


def test_a_run_without_usage_says_not_reported_never_zero(cost_api, monkeypatch) -> None:
    assert _api(cost_api, f"runs/{RUN_SILENT}")["usage"] is None
    at = open_page("run_detail", monkeypatch, cost_api, query={"run_id": RUN_SILENT})
    assert "Cost: not reported" in _words(at).replace("**", "")
    assert set(tables(at)[0]["Leg cost"]) == {"—"}


def test_loops_list_the_most_expensive_first(cost_api, monkeypatch) -> None:
    loops = {r["run_id"]: r for r in _api(cost_api, "loops")["loops"]}
    assert {RUN_BIG, RUN_SMALL, RUN_ODD} <= set(loops)
    assert loops[RUN_ODD]["burned"]["cost_usd"] is None  # nobody prices acme-llm-9
    assert _price(PRICED, *LEG[RUN_BIG]) is not None
    # The unknown model burned the most tokens, yet comes after every priced loop.
    expected = [RUN_BIG, RUN_SMALL, RUN_ODD]
    at = open_page("loops", monkeypatch, cost_api)
    runs = tables(at)[1]
    ids = [str(r).rsplit("=", 1)[-1] for r in runs["Run"]]
    assert ids == expected
    row = runs.assign(run=ids).set_index("run")
    assert row.at[RUN_ODD, "Tokens burned"] == f"{cost.total_tokens(loops[RUN_ODD]['burned']):,}"
    assert row.at[RUN_ODD, "$ burned"] == "not priced"
    assert "could not be priced" in _words(at)
    # "Most recent first" stays available: the collector's order, newest loop first.
    at.radio(key="loops_order").set_value(1).run()
    recent = [str(r).rsplit("=", 1)[-1] for r in tables(at)[1]["Run"]]
    assert recent == [RUN_SMALL, RUN_ODD, RUN_BIG]


def test_control_flow_shows_spend_and_waste_per_edge(cost_api, monkeypatch) -> None:
    edges = {(e["from_agent"], e["to_agent"]): e for e in _api(cost_api, "edges")["edges"]}
    at = open_page("control_flow", monkeypatch, cost_api)
    table = next(t for t in tables(at) if "Spend" in t.columns)
    row = dict(zip(table["Edge"], zip(table["Spend"], table["Wasted"], strict=True), strict=True))
    back = edges[("billing", "triage")]
    # billing → triage happens only inside loops: every token of it went to unhealthy handoffs.
    assert back["unhealthy"] == back["count"]
    spend, wasted = row["billing → triage"]
    assert spend == cost.cell(back["usage"])
    assert spend.startswith(f"{cost.total_tokens(back['usage']):,} tokens")
    assert "$0.00" not in spend  # an edge nothing could price is not free
    assert wasted.startswith("100 %")


def test_weekly_review_says_what_failures_cost_week_over_week(cost_api, monkeypatch) -> None:
    review = httpx.get(f"{cost_api}/api/v1/review/weekly", timeout=10).json()
    assert _api(cost_api, f"runs/{RUN_REFUSED}")["verdict"] == sc.CONTRACT_REJECTED
    at = open_page("weekly_review", monkeypatch, cost_api)
    table = next(t for t in tables(at) if "Runs that ended in" in t.columns)
    rows = table.set_index("Runs that ended in")
    now = f"This week so far ({review['this_week']}, partial)"
    last = f"Last week ({review['last_week']})"
    # This week: the three loops, each its legs (handoffs + 1) of one call.
    loop_tokens = 6 * sum(LEG[RUN_BIG]) + 6 * sum(LEG[RUN_ODD]) + 4 * sum(LEG[RUN_SMALL])
    loop_usd = [_expected_usd(RUN_BIG, 6), _expected_usd(RUN_SMALL, 4)]
    spend = {(r["week"], r["verdict"]): r for r in review["spend"]}
    loop_row = spend[(review["this_week"], sc.LOOP)]
    assert loop_row["runs"] == 3
    assert cost.total_tokens(loop_row["usage"]) == loop_tokens
    # gpt-4o priced, acme-llm-9 left out of the sum and counted
    assert None not in loop_usd
    usd = cost.money(sum(loop_usd))
    assert rows.at["Loops", now] == (
        f"{usd} + 1 not priced · {style.percent(loop_row['share'])} of spend (3 runs)"
    )
    # Last week: only the refused run — its two legs, under Rejections; no loop then.
    assert rows.at["Loops", last] == "—"
    refused = rows.at["Rejections", last]
    assert refused.endswith("(1 run)")
    usd = _expected_usd(RUN_REFUSED, 2)
    assert refused == f"{cost.money(usd)} · 100 % of spend (1 run)"
    assert rows.at["Rejections", now] == "—"


def test_live_shows_budget_burn_where_a_budget_is_stated(cost_api, monkeypatch) -> None:
    live = httpx.get(f"{cost_api}/api/v1/live", timeout=10).json()
    runs = {r["run_id"]: r for r in live["runs_in_flight"]}
    mine = runs[RUN_BUDGET]
    assert mine["budget_remaining"] == 4  # what the latest request said was left
    # Two calls reported so far (one per request) of the 2 + 4 the latest request implied.
    assert mine["model_calls"] == 2
    assert mine["budget_used"] == pytest.approx(2 / (2 + 4), abs=1e-5)
    at = open_page("live", monkeypatch, cost_api)
    table = next(t for t in tables(at) if "Budget used" in t.columns)
    ids = [str(r).rsplit("=", 1)[-1] for r in table["Run"]]
    used = dict(zip(ids, table["Budget used"], strict=True))
    assert used[RUN_BUDGET] == f"{style.percent(mine['budget_used'])} (4 calls left)"
