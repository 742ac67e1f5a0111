"""Each page of the real Streamlit app (AppTest) against a real collector with real spans.

Assertions are what a person looks for on the page: the run that looped and its cycle, the
overdue approval at the top, the boundary that failed first, the verdict in words, the
clear message when the collector is down or refuses the token. Nothing is mocked: the
collector is the real process (tests/conftest.py), fed by the real OTLP exporter.
"""

from __future__ import annotations

import json
import re

import pytest
from dashboard_support import (
    BILLING,
    MINUTE_NS,
    OWNER_OVERDUE,
    OWNER_PENDING,
    RUN_FALSE_COMPLETE,
    RUN_LOOP,
    RUN_OVERDUE,
    RUN_ROUTE,
    RUN_STALE,
    RUN_UNCERTAIN,
    RUN_WAITING,
    SUPPORT,
    RunBuilder,
    open_page,
    plotly_specs,
    seed,
    tables,
    texts,
)
from support.dashboard import PAGES

from handoffscope.dashboard import layout, style
from handoffscope.instrumentation import semconv as sc

LABEL = sc.VERDICT_LABELS


def _column(df, name: str) -> list[str]:
    return [str(v) for v in df[name]]


def _with(at, column: str) -> list:
    """The page's tables that have this column, in page order."""
    found = [t for t in tables(at) if column in t.columns]
    assert found, f"no table with a {column!r} column"
    return found


def _row(df, column: str, contains: str):
    hits = df[df[column].astype(str).str.contains(contains, regex=False)]
    assert not hits.empty, f"no row with {contains!r} in {column!r}: {list(df[column])}"
    return hits.iloc[0]


# --- with data ---------------------------------------------------------------------------


def test_live_board_shows_unhealthy_handoffs_with_next_step_and_runs_in_flight(
    seeded_api, monkeypatch
):
    at = open_page("live", monkeypatch, seeded_api)
    page = texts(at)
    assert "Last updated" in page and "refreshes every" in page
    for tile in ("Stuck runs", "Looping", "Approvals overdue", "Done without proof"):
        assert tile in page
    # The run that went silent without ending is stuck (and not the waiting one).
    stuck = _with(at, "Silent for")[0]
    assert RUN_ROUTE in " ".join(_column(stuck, "Run"))
    assert RUN_WAITING not in " ".join(_column(stuck, "Run"))
    unhealthy = _with(at, "Handoff")[0]
    in_flight = _with(at, "Agent holding the work")[-1]
    route = _row(unhealthy, "Run", RUN_ROUTE)
    assert route["Verdict"] == LABEL[sc.ROUTE_REJECTED]
    assert route["Handoff"] == "triage → refunds"
    assert route["Safe next step"] == sc.NEXT_STEPS[sc.ROUTE_REJECTED]
    # Runs still going: the agent holding the work and time since the last handoff, in words.
    waiting = _row(in_flight, "Run", RUN_WAITING)
    assert waiting["Agent holding the work"] == "approver"
    assert waiting["Silent for"].endswith(("s", "min"))
    timeline, volume = plotly_specs(at)[:2]
    # Unhealthy handoffs by verdict on one chart, every handoff on its own (one scale each).
    assert LABEL[sc.ROUTE_REJECTED] in timeline and "All handoffs" in volume
    assert '"yaxis2"' not in timeline


def test_live_board_service_filter_narrows_to_one_service(seeded_api, monkeypatch):
    at = open_page("live", monkeypatch, seeded_api)
    assert SUPPORT in at.sidebar.selectbox[0].options
    at.sidebar.selectbox[0].select(SUPPORT).run()
    assert not at.exception
    assert at.query_params["service"] == SUPPORT  # the choice is in the URL
    unhealthy = _with(at, "Handoff")[0]
    assert set(unhealthy["Service"]) == {SUPPORT}
    assert RUN_STALE in " ".join(_column(unhealthy, "Run"))


def test_control_flow_graph_marks_undeclared_edge_and_links_its_runs(seeded_api, monkeypatch):
    at = open_page("control_flow", monkeypatch, seeded_api)
    graph = json.loads(plotly_specs(at)[0])
    for agent in ("triage", "billing", "refunds", "approver"):
        assert agent in json.dumps(graph["data"])
    # One drawn path per edge; the undeclared one dashed, the others solid.
    dashes = [shape["line"]["dash"] for shape in graph["layout"]["shapes"]]
    assert dashes.count("dash") == 1 and len(dashes) == len(tables(at)[0])
    edges = tables(at)[0]
    undeclared = _row(edges, "Edge", "triage → refunds")
    assert undeclared["Undeclared"].startswith("⚠")
    assert undeclared["Unhealthy"] == "100 %"
    assert _row(edges, "Edge", "triage → billing")["Undeclared"] == "declared"
    # Worst first: the undeclared route leads the table and the edge picker; its runs link to Run detail.
    assert edges.iloc[0]["Edge"] == "triage → refunds"
    assert at.selectbox(key="cf_edge").value == 0
    runs = tables(at)[1]
    assert any(layout.run_url(RUN_ROUTE) == u for u in runs["Run"])


def test_loops_page_draws_the_cycle_with_repeats_and_turns(seeded_api, monkeypatch):
    at = open_page("loops", monkeypatch, seeded_api)
    cycles, loops = tables(at)[:2]
    # Grouped by cycle, named from its smallest agent: triage → billing → triage is this one.
    assert _row(cycles, "Cycle", "billing → triage → billing")["Runs"] == 1
    row = _row(loops, "Run", RUN_LOOP)
    assert row["Cycle"].startswith("triage → billing")
    assert row["Cycle"].split(" → ")[0] == row["Cycle"].split(" → ")[-1]
    assert row["Turns burned"] == "12 turns"
    assert "repeated" in texts(at)
    path_chart = plotly_specs(at)[0]
    assert "triage" in path_chart and "billing" in path_chart


def test_approvals_page_is_an_escalation_list_by_owner(seeded_api, monkeypatch):
    at = open_page("approvals", monkeypatch, seeded_api)
    owners = _with(at, "Most urgent")[0]
    # Nobody answers a wait without an owner: that group first, then the overdue owner.
    assert list(owners["Owner"])[:3] == ["— no owner —", OWNER_OVERDUE, OWNER_PENDING]
    assert _row(owners, "Owner", OWNER_OVERDUE)["Overdue"] == 1
    groups = _with(at, "Status")
    overdue = _row(groups[1], "Run", RUN_OVERDUE)
    assert overdue["Status"] == LABEL[sc.APPROVAL_OVERDUE]
    assert overdue["Time left"].startswith("overdue by")
    pending = _row(groups[2], "Run", RUN_WAITING)
    assert pending["Time left"].startswith("in ")
    uncertain = _row(groups[0], "Run", RUN_UNCERTAIN)
    assert "owner" in uncertain["Missing"]
    # Nobody to escalate to: the service's operator is who acts.
    assert uncertain["Safe next step"].startswith("No owner: the operator of ")
    assert list(groups[1].columns)[:3] == ["Status", "Run", "Time left"]
    assert "Overdue: 1 wait" in texts(at)
    # One bar per owner, counted by deadline bucket — not one bar per wait.
    chart = json.loads(plotly_specs(at)[0])
    names = {t["name"] for t in chart["data"]}
    assert "overdue ≤ 1 h" in names or "overdue > 1 h" in names
    owners_drawn = {y for t in chart["data"] for y in t["y"]}
    assert len(owners_drawn) == len(owners)


def test_false_completions_lists_the_run_that_claimed_done_without_a_verifier(
    seeded_api, monkeypatch
):
    at = open_page("false_completions", monkeypatch, seeded_api)
    runs = tables(at)[0]
    row = _row(runs, "Run", RUN_FALSE_COMPLETE)
    assert row["Verifier"] == "no verifier ran"
    assert row["Claimed done by"] == "billing"
    # Runs backed by a passing verifier are not here.
    assert not any("run-healthy" in u for u in runs["Run"])


def test_runs_are_reachable_page_by_page(collector_factory, monkeypatch):
    # More matches than a page holds: every run is reachable, the URL keeps the page.
    def many(tracers, now_ns: int) -> None:
        for i in range(230):
            run = RunBuilder(
                tracers[SUPPORT], f"page-run-{i:03d}", now_ns - (i + 1) * MINUTE_NS // 10
            )
            run.started().handoff("triage", "billing", minute=0.01)

    proc = collector_factory()
    seed(proc.http_endpoint, build=many, services=(SUPPORT,))
    first = open_page("runs", monkeypatch, proc.http_endpoint)
    assert any("Runs 1–200 of 230" in c.value for c in first.caption)
    assert len(_with(first, "Run")[0]) == 200
    second = open_page("runs", monkeypatch, proc.http_endpoint, query={"page": "2"})
    rows = _with(second, "Run")[0]
    assert any("Runs 201–230 of 230" in c.value for c in second.caption)
    ids = {re.search(r"page-run-\d+", u)[0] for u in rows["Run"]}
    assert len(rows) == 30 and ids == {f"page-run-{i:03d}" for i in range(200, 230)}


def test_run_detail_says_the_cause_once(collector_factory, monkeypatch):
    # A context key missing at the destination: the note names it once, in the cause.
    def missing(tracers, now_ns: int) -> None:
        run = RunBuilder(tracers[SUPPORT], "run-missing-key", now_ns - 5 * MINUTE_NS).started()
        run.handoff("triage", "billing", minute=0.1, admitted=False)
        run.span(
            sc.SPAN_ACCEPT,
            run.start_ns + MINUTE_NS // 5,
            {sc.HANDOFF_ID: "h1", sc.DESTINATION_STARTED: True,
             sc.CONTEXT_MISSING_KEYS: ["customer_tier"]},
        )  # fmt: skip

    proc = collector_factory()
    seed(proc.http_endpoint, build=missing, services=(SUPPORT,))
    at = open_page(
        "run_detail", monkeypatch, proc.http_endpoint, query={"run_id": "run-missing-key"}
    )
    notes = [m.value for m in at.markdown if "failed at" in m.value]
    assert len(notes) == 1, notes
    assert notes[0].count("customer_tier") == 1, notes[0]
    assert "missing at destination" in notes[0] and "``" not in notes[0]


def test_run_detail_links_its_trace_into_the_teams_trace_viewer(seeded_api, monkeypatch):
    from handoffscope.dashboard.config import ENV_TRACE_LINK

    at = open_page("run_detail", monkeypatch, seeded_api, query={"run_id": RUN_ROUTE})
    plain = " ".join(c.value for c in at.caption)
    assert "trace `" in plain and "jaeger.example" not in plain
    monkeypatch.setenv(ENV_TRACE_LINK, "http://jaeger.example/trace/{trace_id}")
    at = open_page("run_detail", monkeypatch, seeded_api, query={"run_id": RUN_ROUTE})
    linked = " ".join(c.value for c in at.caption)
    found = re.search(
        r"\[`([0-9a-f]{32})`\]\(http://jaeger\.example/trace/([0-9a-f]{32})\)", linked
    )
    assert found and found[1] == found[2], linked


def test_run_detail_deep_link_highlights_the_first_failing_boundary(seeded_api, monkeypatch):
    at = open_page("run_detail", monkeypatch, seeded_api, query={"run_id": RUN_ROUTE})
    assert any(
        LABEL[sc.ROUTE_REJECTED] in e.value and sc.NEXT_STEPS[sc.ROUTE_REJECTED] in e.value
        for e in at.error
    )
    handoffs = tables(at)[0]
    first = handoffs.iloc[0]
    assert first["Handoff"] == "triage → refunds"
    assert first["Route"] == "✗ failed"
    assert first["First failure"] == "Route"
    assert "refunds" in first["Why"]
    # Timeline and path are charts of this run's evidence.
    specs = plotly_specs(at)
    assert len(specs) == 2 and "refunds" in specs[0]


def test_run_detail_of_a_loop_shows_path_and_cycle(seeded_api, monkeypatch):
    at = open_page("run_detail", monkeypatch, seeded_api, query={"run_id": RUN_LOOP})
    page = texts(at)
    assert "triage → billing → triage" in page
    handoffs = tables(at)[0]
    assert LABEL[sc.LOOP] in set(handoffs["Verdict"])
    assert "Progress (loop)" in set(handoffs["First failure"])
    # The grid agrees with the verdict: the looping handoff fails its progress column
    # (a loop run used to read all green across the six boundaries).
    looped = handoffs[handoffs["Verdict"] == LABEL[sc.LOOP]]
    assert set(looped["Progress (loop)"]) == {style.BOUNDARY_STATE_WORDS["failed"]}
    # The header names it in words: the verdict, the edge, the boundary, what to do.
    assert "boundary **Progress (loop)**" in page and "**Do:**" in page
    assert "Loop evidence:" in page and "12 turns burned" in page


def test_run_detail_of_an_overdue_wait_shows_the_wait_and_its_evidence(seeded_api, monkeypatch):
    at = open_page("run_detail", monkeypatch, seeded_api, query={"run_id": RUN_OVERDUE})
    handoffs, waits = tables(at)
    assert handoffs.iloc[0]["First failure"] == "Wait checkpoint"
    wait = waits.iloc[0]
    assert wait["Status"] == LABEL[sc.APPROVAL_OVERDUE]
    assert wait["Owner"] == OWNER_OVERDUE and wait["Time left"].startswith("overdue by")
    timeline = plotly_specs(at)[1]
    for kind in ("Request", "Transfer", "Accept", "Wait", "Run"):
        assert f'"name":"{kind}"' in timeline.replace(" ", ""), kind


def test_run_detail_without_id_offers_recent_runs_and_unknown_id_says_so(seeded_api, monkeypatch):
    at = open_page("run_detail", monkeypatch, seeded_api)
    assert not tables(at)
    recent = at.selectbox(key="rd_recent")
    # Unhealthy first: the undeclared route (rule 1) leads the list.
    assert recent.options[0].startswith(RUN_ROUTE)
    recent.select(RUN_ROUTE).run()
    assert at.query_params.get("run_id") == RUN_ROUTE
    assert at.text_input(key="rd_run_id").value == RUN_ROUTE
    assert tables(at)[0].iloc[0]["Handoff"] == "triage → refunds"

    at = open_page("run_detail", monkeypatch, seeded_api, query={"run_id": "no-such-run"})
    assert any("no run with this id" in e.value for e in at.error)


def test_weekly_review_compares_this_week_with_last_and_offers_csv(seeded_api, monkeypatch):
    at = open_page("weekly_review", monkeypatch, seeded_api)
    page = texts(at)
    assert "Rejection rate, last week" in page and "This week so far" in page
    assert "partial" in page
    by_reason = tables(at)[0]
    assert "Invalid contract" in set(by_reason["Reason"])  # last week's refusal
    assert "Undeclared route" in set(by_reason["Reason"])  # this week's
    edges = tables(at)[1]
    assert "triage → refunds" in set(edges["Edge"])
    download = at.get("download_button")
    assert download, "a CSV download is offered"


def test_service_filter_on_lists_hides_other_services(seeded_api, monkeypatch):
    at = open_page("control_flow", monkeypatch, seeded_api)
    at.sidebar.selectbox[0].select(BILLING).run()
    edges = tables(at)[0]
    assert "support → billing" not in set(edges["Edge"])
    at.sidebar.selectbox[0].select(SUPPORT).run()
    assert set(tables(at)[0]["Edge"]) == {"support → billing"}


def test_sources_page_puts_an_unread_scope_first_and_the_live_board_says_so(
    collector_factory, monkeypatch
):
    # A team added the collector as one more OTLP destination: the shim's spans beside an
    # HTTP client instrumentation's, which nothing reads.
    from support.otlp import export_request, otlp_span

    proc = collector_factory()
    shim = otlp_span(sc.SPAN_REQUEST, {sc.RUN_ID: "src-run", sc.HANDOFF_ID: "h1",
                                        sc.FROM_AGENT: "triage", sc.TO_AGENT: "billing"})  # fmt: skip
    for scope, spans in (
        (sc.INSTRUMENTATION_SCOPE, [shim]),
        ("opentelemetry.instrumentation.httpx", [otlp_span("GET"), otlp_span("POST")]),
    ):
        body = export_request(spans, service=SUPPORT, scope=scope).SerializeToString()
        assert proc.post_traces(body).status_code == 200
    proc.loaded()

    at = open_page("sources", monkeypatch, proc.http_endpoint)
    assert not at.error
    table = _with(at, "Instrumentation scope")[0]
    first = table.iloc[0]
    assert first["Instrumentation scope"] == "opentelemetry.instrumentation.httpx"
    assert first["Status"].endswith("not judged") and first["Refused"] == 2
    assert "no translator reads" in first["Advice"]
    judged = _row(table, "Instrumentation scope", sc.INSTRUMENTATION_SCOPE)
    assert judged["Status"].endswith("judged") and judged["Evidence"] == 1
    assert any("sent spans that are not judged" in w.value for w in at.warning)

    live = open_page("live", monkeypatch, proc.http_endpoint)
    warnings = " ".join(w.value for w in live.warning)
    assert "opentelemetry.instrumentation.httpx" in warnings and "(sources)" in warnings


# --- empty, unreachable, refused ---------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_empty_collector_gives_each_page_a_useful_empty_state(page, empty_api, monkeypatch):
    at = open_page(page, monkeypatch, empty_api)
    messages = [e.value for e in at.info] + [e.value for e in at.success]
    assert messages, f"{page}: no empty-state message"
    assert any(m.startswith("**No ") for m in messages), messages
    assert not at.error


def test_unreachable_collector_is_a_message_on_every_page(closed_port_api, monkeypatch):
    for page in PAGES:
        at = open_page(
            page,
            monkeypatch,
            closed_port_api,
            query={"run_id": "r1"} if page == "run_detail" else None,
        )
        errors = [e.value for e in at.error]
        # The whole message is inert text (style.md), the collector's address in it as typed.
        assert any("Cannot reach the collector" in e and closed_port_api in e for e in errors), (
            page,
            errors,
        )
        assert "not answering" in " ".join(c.value for c in at.sidebar.caption)


def test_token_refused_and_token_missing_are_told_apart(token_api, monkeypatch):
    api, token = token_api
    for page in ("live", "approvals", "weekly_review"):
        at = open_page(page, monkeypatch, api, token="wrong-" + token)
        assert any("refused the dashboard's token" in e.value for e in at.error), page
    at = open_page("live", monkeypatch, api, token=None)
    assert any("requires a token" in e.value for e in at.error)
    at = open_page("live", monkeypatch, api, token=token)
    assert not at.error


HOSTILE_AGENT = "[click me](https://evil.example) <b>loud</b> :material/lock: $x$"


def _hostile_run(tracers, now_ns):
    RunBuilder(tracers[BILLING], "run-hostile", now_ns - 2 * MINUTE_NS).started().handoff(
        "triage", HOSTILE_AGENT, minute=0.1, declared=False
    )


def test_agent_names_from_the_wire_are_shown_as_typed_not_as_markdown(
    collector_factory, monkeypatch
):
    """Agent names may hold any text (bounded); the dashboard must not turn one into markup."""
    api = collector_factory().http_endpoint
    seed(api, build=_hostile_run)
    at = open_page("run_detail", monkeypatch, api, query={"run_id": "run-hostile"})
    page = texts(at)
    assert style.md(HOSTILE_AGENT) in page  # inert wherever it is markdown
    # Only ever inside a code span, where nothing is parsed (the browser test,
    # test_inert_text.py, checks the DOM).
    assert "click me" not in re.sub(r"(`+).*?\1", "", page)
    # Plotly reads <b>, <a href> in labels: the path chart gets the name as text.
    path_labels = " ".join(json.loads(plotly_specs(at)[0])["data"][0]["text"])
    assert "&lt;b&gt;loud&lt;/b&gt;" in path_labels and "<b>" not in path_labels
    # Tables hold plain text (no markdown there), so the name reads exactly as sent.
    assert tables(at)[0].iloc[0]["Handoff"] == f"triage → {HOSTILE_AGENT}"


@pytest.mark.parametrize(
    "value",
    ["run-1", "a`b", "``x``", "` leading", "trailing `", " spaced ", "x\ny", "a\r\n\tb\x00"],
)
def test_md_puts_any_value_in_one_code_span_it_cannot_close(value):
    shown = style.md(value)
    fence = re.match(r"`+", shown).group(0)
    assert shown.endswith(fence)
    inner = shown[len(fence) : -len(fence)]
    assert fence not in inner  # the value cannot close the span early
    assert "\n" not in shown and "\r" not in shown  # nor end the paragraph around it
    if inner.startswith(" ") and inner.endswith(" "):
        inner = inner[1:-1]  # CommonMark strips one space from both ends
    assert inner == style.without_controls(value)


def test_md_of_nothing_is_nothing():
    assert style.md(None) == "" and style.md("") == ""


def test_filters_and_selections_live_in_the_url(seeded_api, monkeypatch):
    at = open_page(
        "runs", monkeypatch, seeded_api, query={"q": RUN_LOOP, "window": "7d", "sort": "bogus"}
    )
    # A link sets the widgets; a value that is not an option is ignored, not an error.
    assert at.text_input(key="runs_q").value == RUN_LOOP
    assert at.sidebar.selectbox[1].value == "Last 7 days"
    assert at.selectbox(key="runs_sort").value == "newest"
    found = _with(at, "Trace")[0]
    assert _column(found, "Run") == [layout.run_url(RUN_LOOP)]
    # A change goes back into the URL, so the view can be shared; defaults stay out of it.
    at.selectbox(key="runs_sort").select("severity").run()
    assert not at.exception
    assert at.query_params["sort"] == "severity" and at.query_params["q"] == RUN_LOOP
    assert at.query_params["window"] == "7d"
    at.selectbox(key="runs_sort").select("newest").run()
    assert "sort" not in at.query_params
