"""What the work cost, as the engine stores it: each leg placed, summed and priced; the run's
sum, its loop's share, the edge and day rollups — exact whatever the arrival order, across
restarts, on DuckDB and PostgreSQL.

A leg is the work one agent does while it holds control (docs/semconv.md, "Usage"): the
request an agent sends reports its own leg, the run's end reports the last one, and a
translated model call (`handoff.usage`) is placed by its agent and time.
"""

from __future__ import annotations

import random

import pytest
from test_engine import Collector, accept, request, run_span, span

from handoffscope.collector.engine import run_daily_key
from handoffscope.collector.engine.usage import Loose, Report, Transfer, legs
from handoffscope.instrumentation import semconv as sc

PRICES = {"m1": (1e-6, 2e-6), "m3": (5e-6, 5e-6)}
"""USD per input and output token of the models these tests price; any other is unknown."""


def price(model, input_tokens, output_tokens, at_ns):
    if model not in PRICES:
        return None
    pin, pout = PRICES[model]
    return (input_tokens or 0) * pin + (output_tokens or 0) * pout


def used(tin, tout, calls, model) -> dict:
    return {
        sc.GEN_AI_USAGE_INPUT_TOKENS: tin,
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: tout,
        sc.USAGE_MODEL_CALLS: calls,
        sc.GEN_AI_REQUEST_MODEL: model,
    }


def chain(run: str = "r") -> list[dict]:
    """A → B → C, then the run completes: each agent's leg on the span that ends it."""
    return [
        run_span(run, sc.RUN_STATUS_STARTED, at=0),
        request(run, "h1", "A", "B", turn=1, at=1, a=used(100, 10, 1, "m1")),  # A's leg
        accept(run, "h1", at=2),
        request(run, "h2", "B", "C", turn=2, fp="fp2", at=3, a=used(200, 20, 2, "m1")),  # B's
        accept(run, "h2", at=4),
        run_span(run, sc.RUN_STATUS_COMPLETED, at=5, a=used(300, 30, 1, "m2")),  # C's: unknown
    ]


@pytest.fixture
def priced(tmp_path, store_target):
    c = Collector(
        store_target(tmp_path / "usage.duckdb"), grace_seconds=30, require_outcome=(), price=price
    )
    yield c
    c.close()


def usage_of(row: dict, prefix: str = "") -> tuple:
    return tuple(
        row[f"{prefix}{c}"] for c in ("input_tokens", "output_tokens", "model_calls", "cost_usd")
    )


def test_each_handoff_carries_its_destinations_leg_and_the_run_their_sum(priced):
    priced.send(*chain())
    h1, h2 = priced.handoff("r", "h1"), priced.handoff("r", "h2")
    # h1 gave B its leg (B's request reported it); h2 gave C the last (the run's end).
    assert usage_of(h1) == (200, 20, 2, pytest.approx(200e-6 + 40e-6))
    assert h1["model"] == "m1"
    assert usage_of(h2) == (300, 30, 1, None)  # m2 has no price: null, not a guess
    assert h2["model"] == "m2"
    run = priced.run("r")
    # Every leg, A's first one included (it belongs to no handoff).
    assert usage_of(run)[:3] == (600, 60, 4)
    assert run["cost_usd"] is None and list(run["unpriced_models"]) == ["m2"]
    assert run["burned_input_tokens"] is None  # no loop, nothing burned


def test_a_fully_priced_run_has_its_cost(priced):
    rows = chain()
    rows[-1] = run_span("r", sc.RUN_STATUS_COMPLETED, at=5, a=used(300, 30, 1, "m3"))
    priced.send(*rows)
    run = priced.run("r")
    want = (100 + 200) * 1e-6 + (10 + 20) * 2e-6 + (300 + 30) * 5e-6
    assert run["cost_usd"] == pytest.approx(want)
    assert list(run["unpriced_models"] or []) == []
    assert run["model"] == "m1"  # three calls of m1, one of m3


def test_a_leg_reported_later_rewrites_the_handoff_and_its_edge_once(priced):
    rows = chain()
    priced.send(*rows[:3])
    assert priced.handoff("r", "h1")["input_tokens"] is None  # B still holds control
    priced.restart()  # the run reloads from its rows and spans
    priced.send(*rows[3:])
    assert usage_of(priced.handoff("r", "h1"))[:3] == (200, 20, 2)
    assert_rollups_match_rows(priced)


def test_loop_burned_is_what_its_legs_spent_from_the_first_repeat_on(priced):
    rows = [run_span("r", sc.RUN_STATUS_STARTED, at=0)]
    agents = ["A", "B"] * 3
    for i in range(5):
        frm, to = agents[i], agents[i + 1]
        rows.append(
            request(
                "r",
                f"h{i}",
                frm,
                to,
                turn=i + 1,
                fp="same",
                sv=3,
                at=2 * i + 1,
                a=used(10 * (i + 1), i + 1, 1, "m1"),
            )
        )
        rows.append(accept("r", f"h{i}", at=2 * i + 2))
    rows.append(run_span("r", sc.RUN_STATUS_MAX_TURNS, at=20, a=used(1000, 100, 1, "m1")))
    priced.send(*rows)
    run = priced.run("r")
    assert run["loop"]
    handoffs = [priced.handoff("r", f"h{i}") for i in range(5)]
    first = next(i for i, h in enumerate(handoffs) if h["loop"])
    # The legs from the first repeat on: each later request's, then the run's end.
    later = [(10 * (i + 1), i + 1) for i in range(first + 1, 5)] + [(1000, 100)]
    assert (run["burned_input_tokens"], run["burned_output_tokens"]) == (
        sum(t for t, _ in later),
        sum(t for _, t in later),
    )
    assert run["burned_model_calls"] == len(later)
    assert (run["burned_input_tokens"] or 0) < run["input_tokens"]  # the first legs were not burned
    loops = priced.table("run_daily")
    assert len(loops) == 1 and loops[0][2] == sc.LOOP


def test_translated_model_calls_land_in_their_agents_leg(priced):
    """`handoff.usage` spans (a translator's, one per model call) name their agent: each is
    placed in the leg that agent held at its start; one naming no agent, in the last leg."""

    def call(at, agent, tin, model="m1"):
        a = {**used(tin, 1, 1, model), **({sc.GEN_AI_AGENT_NAME: agent} if agent else {})}
        return span(sc.SPAN_USAGE, "t", at=at, a=a)

    priced.send(
        call(0.5, "A", 1),
        request("t", "h1", "A", "B", turn=1, at=1),
        accept("t", "h1", at=2),
        call(2.5, "B", 10),
        call(2.6, "B", 20),
        call(2.7, "tool_agent", 40),  # called as a tool by B: B's leg
        request("t", "h2", "B", "A", turn=2, fp="fp2", at=3),
        accept("t", "h2", at=4),
        call(4.5, "A", 100),  # A again: the leg h2 gave it, not A's first
        call(4.6, None, 1000),  # no agent: the last leg
    )
    assert priced.handoff("t", "h1")["input_tokens"] == 70
    assert priced.handoff("t", "h2")["input_tokens"] == 1100
    assert priced.run("t")["input_tokens"] == 1171
    assert priced.run("t")["model_calls"] == 6


def test_arrival_order_and_duplicates_change_nothing(tmp_path, store_target):
    rows = chain("o") + chain("p")
    want = None
    for seed in range(3):
        c = Collector(
            store_target(tmp_path / f"o{seed}.duckdb"),
            grace_seconds=30,
            require_outcome=(),
            price=price,
        )
        shuffled = rows[:]
        random.Random(seed).shuffle(shuffled)
        for part in (shuffled[:5], shuffled[5:], shuffled[3:9]):  # the last re-sends some
            c.send(*part)
        got = (
            c.table("handoffs", frozenset({"row_seq"})),
            c.table("run_daily", where="runs <> 0"),
            c.table("edge_hourly", where="handoffs <> 0"),
        )
        assert_rollups_match_rows(c)
        c.close()
        if want is None:
            want = got
        assert got == want


def assert_rollups_match_rows(c: Collector) -> None:
    """The edge and day rollups, kept by deltas, equal sums over the stored rows."""
    edges = c.q(
        "SELECT from_agent, to_agent, sum(handoffs), sum(input_tokens), sum(output_tokens),"
        " sum(model_calls), sum(cost_nusd), sum(unpriced) FROM edge_hourly"
        " GROUP BY 1, 2 HAVING sum(handoffs) <> 0 ORDER BY 1, 2"
    )
    rows = c.q(
        "SELECT from_agent, to_agent, count(*), coalesce(sum(input_tokens), 0),"
        " coalesce(sum(output_tokens), 0), coalesce(sum(model_calls), 0),"
        " coalesce(sum(round(cost_usd * 1e9)), 0),"
        " count(*) FILTER (WHERE model_calls IS NOT NULL AND cost_usd IS NULL)"
        " FROM handoffs WHERE kind IS DISTINCT FROM 'delegation' GROUP BY 1, 2 ORDER BY 1, 2"
    )
    assert [tuple(int(v) if isinstance(v, int | float) else v for v in r) for r in edges] == [
        tuple(int(v) if isinstance(v, int | float) else v for v in r) for r in rows
    ]
    daily = c.q(
        "SELECT sum(runs), sum(input_tokens), sum(model_calls), sum(unpriced) FROM run_daily"
    )
    runs = c.q(
        "SELECT count(*), coalesce(sum(input_tokens), 0), coalesce(sum(model_calls), 0),"
        " count(*) FILTER (WHERE model_calls IS NOT NULL AND cost_usd IS NULL) FROM runs"
    )
    assert [tuple(map(int, r)) for r in daily] == [tuple(map(int, r)) for r in runs]


def test_run_daily_buckets_by_the_verdict_the_run_ends_in(priced):
    priced.send(*chain())
    [(day, service, verdict, n, tin, *_)] = priced.table("run_daily")
    run = priced.run("r")
    assert (day, service, n, tin) == (run["first_seen_ns"] // 86_400_000_000_000, "svc", 1, 600)
    assert verdict == run_daily_key(_Run(run))[2]


class _Run:
    def __init__(self, row: dict) -> None:
        self.__dict__.update(row)


def test_leg_placement_rules():
    r = Report(1, 0, 1, "m")
    t = [
        Transfer("A", "B", 10, (Report(5, 0, 1, "m"), 9)),
        Transfer("B", "C", 20, (Report(7, 0, 1, "m"), 19)),
    ]
    out = legs(t, [Loose(25, "C", r), Loose(15, "B", r), Loose(1, "A", r)], "C", price)
    assert [u.input_tokens if u else None for u in out] == [5 + 1, 7 + 1, 1]
    # A rejected last handoff: the run's end is reported by the agent still holding control.
    out = legs(t, [Loose(30, None, Report(50, 0, 1, "m"))], "B", price)
    assert [u.input_tokens if u else None for u in out] == [5, 7 + 50, None]


def test_budget_burn_is_the_calls_spent_of_the_budget_the_latest_request_stated(priced):
    rows = chain("b")
    rows[1]["attrs"][sc.BUDGET_REMAINING] = 10  # after A's one call: a budget of 11
    rows[3]["attrs"][sc.BUDGET_REMAINING] = 7  # after A's and B's three: a budget of 10
    priced.send(*rows[:4])
    run = priced.run("b")
    assert (run["budget_remaining"], run["budget_total"]) == (7, 10)
    priced.send(*rows[4:])
    run = priced.run("b")
    assert (run["model_calls"], run["budget_total"]) == (4, 10)  # C's call spent one more
