"""Helpers for the dashboard tests: a scenario of real spans, and the app under AppTest.

The dashboard reads only through the collector's query API, so its tests run against the
real collector process (the `collector` fixtures of tests/conftest.py) fed by the real
OpenTelemetry SDK: spans are built with a real `TracerProvider` under the contract's
names (`semconv`) and exported with the real `OTLPSpanExporter` over HTTP — one export
call, whose result must be SUCCESS, so a seed that did not land fails loudly.

`SCENARIO` is one run of each kind an operator must see: healthy, a loop, approvals that
are pending, overdue and uncertain, a false completion, an undeclared route, a refused
contract, and last week's runs for the weekly review. Tests assert on what those runs
must look like on each page.
"""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from streamlit.testing.v1 import AppTest
from support import evidence as ev
from support.collector import judged
from support.dashboard import APP
from support.polling import eventually

from handoffscope.dashboard.config import ENV_API, ENV_TOKEN
from handoffscope.instrumentation import semconv as sc

MINUTE_NS = 60 * 1_000_000_000
DAY_NS = 24 * 60 * MINUTE_NS

BILLING = "billing-app"
SUPPORT = "support-app"

# Run ids the assertions look for.
RUN_HEALTHY = "run-healthy"
RUN_LOOP = "run-loop"
RUN_WAITING = "run-wait-pending"
RUN_OVERDUE = "run-wait-overdue"
RUN_UNCERTAIN = "run-wait-uncertain"
RUN_FALSE_COMPLETE = "run-false-complete"
RUN_ROUTE = "run-route-rejected"
RUN_STALE = "run-contract-stale"
RUN_LAST_WEEK = "run-last-week"

CHROMIUM = os.environ.get("HANDOFFSCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DASHBOARD_STARTUP_SECONDS = 60
PAGE_SECONDS = 60
"""A bound on waiting for a page, not a measurement: 30 s was hit once on a loaded CI
machine (two cores shared with collectors and the demo) for a page that rendered fine."""

OWNER_PENDING = "finance-lead"
OWNER_OVERDUE = "ops-oncall"


# --- building spans --------------------------------------------------------------------


@dataclass
class RunBuilder:
    """Evidence spans of one run, in the contract's names, at chosen times."""

    tracer: Any
    run_id: str
    start_ns: int
    turns: int = 0
    handoffs: int = 0
    agents: list[str] = field(default_factory=list)

    def span(self, name: str, at_ns: int, attrs: dict[str, Any]) -> None:
        s = self.tracer.start_span(
            name, start_time=at_ns, attributes={sc.RUN_ID: self.run_id, **attrs}
        )
        s.end(end_time=at_ns + 2_000_000)

    def started(self) -> RunBuilder:
        self.span(sc.SPAN_RUN, self.start_ns, ev.run_status(sc.RUN_STATUS_STARTED))
        return self

    def handoff(
        self,
        frm: str,
        to: str,
        *,
        minute: float,
        declared: bool = True,
        admitted: bool = True,
        rejection: str | None = None,
        fingerprint: str = "fp-task-1",
        state_version: int = 1,
    ) -> RunBuilder:
        """request + transfer + accept, the way a shim reports one handoff."""
        self.handoffs += 1
        self.turns += 1
        hid = f"h{self.handoffs}"
        at = self.start_ns + int(minute * MINUTE_NS)
        request = ev.request(
            frm,
            to,
            turn=self.turns,
            fingerprint=fingerprint,
            state_version=state_version,
            declared=declared,
            **{
                sc.HANDOFF_ID: hid,
                sc.TOOL_CALL_ID: f"call-{self.run_id}-{hid}",
                sc.CONTEXT_REQUIRED_KEYS: ["account_id"],
                sc.HISTORY_ITEMS_FORWARDED: 3,
                sc.HISTORY_ITEMS_TOTAL: 5,
            },
        )
        self.span(sc.SPAN_REQUEST, at, request)
        self.span(
            sc.SPAN_TRANSFER,
            at + 50_000_000,
            {
                sc.HANDOFF_ID: hid,
                sc.ROUTE_GOTO: to,
                sc.CONTROL_BEFORE: frm,
                sc.CONTROL_AFTER: to,
                sc.TOOL_CALL_CLOSED: True,
            },
        )
        if admitted:
            accept = ev.accept(
                started=rejection is None, rejection=rejection, **{sc.HANDOFF_ID: hid}
            )
            self.span(sc.SPAN_ACCEPT, at + 100_000_000, accept)
        self.agents = self.agents or [frm]
        self.agents.append(to)
        return self

    def wait(
        self,
        *,
        minute: float,
        owner: str | None,
        deadline_in_minutes: float | None,
        reason: str = "refund_over_limit",
    ) -> RunBuilder:
        at = self.start_ns + int(minute * MINUTE_NS)
        deadline = None
        if deadline_in_minutes is not None:
            deadline = time.time_ns() + int(deadline_in_minutes * MINUTE_NS)
        attrs = ev.wait(
            owner=owner,
            reason=reason,
            resume_token=f"resume-{self.run_id}",
            deadline=deadline,
            **{sc.HANDOFF_ID: f"h{self.handoffs}"},
        )
        self.span(sc.SPAN_WAIT, at, attrs)
        return self

    def outcome(self, *, minute: float, result: str, verifier: str = "refund_check") -> RunBuilder:
        at = self.start_ns + int(minute * MINUTE_NS)
        self.span(
            sc.SPAN_OUTCOME,
            at,
            ev.outcome(result, verifier=verifier, receipt=f"rcpt-{self.run_id}"),
        )
        return self

    def ended(self, *, minute: float, status: str) -> RunBuilder:
        at = self.start_ns + int(minute * MINUTE_NS)
        attrs = ev.run_status(status, **{sc.RUN_TURNS: self.turns})
        if self.agents:
            attrs[sc.RUN_FINAL_AGENT] = self.agents[-1]
        self.span(sc.SPAN_RUN, at, attrs)
        return self


def build_scenario(tracers: dict[str, Any], now_ns: int) -> None:
    """One run of every kind the pages must show (see the module docstring)."""

    def run(service: str, run_id: str, minutes_ago: float) -> RunBuilder:
        return RunBuilder(tracers[service], run_id, now_ns - int(minutes_ago * MINUTE_NS)).started()

    run(BILLING, RUN_HEALTHY, 30).handoff("triage", "billing", minute=0.5).outcome(
        minute=2, result=sc.OUTCOME_PASS
    ).ended(minute=2.5, status=sc.RUN_STATUS_COMPLETED)

    # triage → billing → triage → billing with the same task and state: a loop.
    loop = run(BILLING, RUN_LOOP, 25)
    for i, (frm, to) in enumerate(
        (("triage", "billing"), ("billing", "triage"), ("triage", "billing"))
    ):
        loop.handoff(frm, to, minute=0.5 + i)
    loop.turns = 12
    loop.ended(minute=4, status=sc.RUN_STATUS_MAX_TURNS)

    run(BILLING, RUN_WAITING, 10).handoff("billing", "approver", minute=0.2).wait(
        minute=0.5, owner=OWNER_PENDING, deadline_in_minutes=60
    )
    run(BILLING, RUN_OVERDUE, 40).handoff("billing", "approver", minute=0.2).wait(
        minute=0.5, owner=OWNER_OVERDUE, deadline_in_minutes=-5, reason="prod_change"
    )
    run(BILLING, RUN_UNCERTAIN, 12).handoff("billing", "approver", minute=0.2).wait(
        minute=0.5, owner=None, deadline_in_minutes=30
    )
    # Claims done, no verifier ran.
    run(BILLING, RUN_FALSE_COMPLETE, 8).handoff("triage", "billing", minute=0.2).ended(
        minute=1, status=sc.RUN_STATUS_COMPLETED
    )
    # refunds is not a declared edge of triage.
    run(BILLING, RUN_ROUTE, 5).handoff("triage", "refunds", minute=0.2, declared=False)
    run(SUPPORT, RUN_STALE, 20).handoff(
        "support", "billing", minute=0.2, rejection=sc.REJECTION_STALE
    ).ended(minute=1, status=sc.RUN_STATUS_FAILED)

    # Last ISO week, for "this week against last": two healthy handoffs and one refused.
    week_ago = now_ns - 7 * DAY_NS
    for i in range(3):
        old = RunBuilder(
            tracers[BILLING], f"{RUN_LAST_WEEK}-{i}", week_ago + i * MINUTE_NS
        ).started()
        old.handoff(
            "triage", "billing", minute=0.2, rejection=sc.REJECTION_INVALID if i == 0 else None
        )
        old.outcome(minute=0.5, result=sc.OUTCOME_PASS).ended(
            minute=1, status=sc.RUN_STATUS_COMPLETED
        )


# A wider scenario for the control-flow graph: 20 agents, a cycle, a self-loop, an
# undeclared route and refusals, all this week. Names the browser test looks for:
FLOW_SERVICE = "flow-app"
FLOW_CYCLE = ("triage", "billing")  # triage → billing → triage, same task and state: a loop
FLOW_SELF = "triage"  # triage → triage
FLOW_UNDECLARED = ("triage", "legal")
FLOW_PATHS: tuple[tuple[str, ...], ...] = (
    ("intake", "triage", "billing", "refunds", "approver", "notifier"),
    ("intake", "triage", "tech", "network", "hardware", "qa"),
    ("intake", "triage", "sales", "renewals", "legal", "privacy"),
    ("intake", "shipping", "returns", "archive"),
    ("intake", "triage", "billing", "fraud", "kyc", "escalation"),
    ("intake", "triage", "tech", "escalation", "notifier"),
)
FLOW_AGENTS = tuple(dict.fromkeys(a for p in FLOW_PATHS for a in p))


def build_flow_scenario(tracers: dict[str, Any], now_ns: int) -> None:
    """Healthy paths through 20 agents (three times each), one run that loops
    triage → billing → triage, one that hands triage to itself, one undeclared
    triage → legal, and refusals on billing → refunds (stale) and tech → network (invalid)."""
    tracer = tracers[FLOW_SERVICE]
    n = 0

    def run(minutes_ago: float) -> RunBuilder:
        nonlocal n
        n += 1
        return RunBuilder(tracer, f"flow-{n:03d}", now_ns - int(minutes_ago * MINUTE_NS)).started()

    for repeat in range(3):
        for i, path in enumerate(FLOW_PATHS):
            r = run(50 - repeat * 10 - i)
            for step, (frm, to) in enumerate(zip(path, path[1:], strict=False)):
                rejection = None
                if repeat == 0 and (frm, to) == ("billing", "refunds"):
                    rejection = sc.REJECTION_STALE
                if repeat == 0 and (frm, to) == ("tech", "network"):
                    rejection = sc.REJECTION_INVALID
                r.handoff(frm, to, minute=0.1 + step * 0.1, fingerprint=f"fp-{n}-{step}",
                          state_version=step, rejection=rejection)  # fmt: skip
                if rejection:
                    break
            r.outcome(minute=1, result=sc.OUTCOME_PASS).ended(
                minute=1.2, status=sc.RUN_STATUS_COMPLETED
            )
    a, b = FLOW_CYCLE
    loop = run(15)
    for i, (frm, to) in enumerate(((a, b), (b, a), (a, b), (b, a))):
        loop.handoff(frm, to, minute=0.1 + i * 0.1)
    loop.turns = 10
    loop.ended(minute=1, status=sc.RUN_STATUS_MAX_TURNS)
    self_loop = run(12).handoff("intake", FLOW_SELF, minute=0.1)
    self_loop.handoff(FLOW_SELF, FLOW_SELF, minute=0.2, fingerprint="fp-self-1", state_version=2)
    self_loop.handoff(FLOW_SELF, "billing", minute=0.3, fingerprint="fp-self-2", state_version=3)
    self_loop.outcome(minute=1, result=sc.OUTCOME_PASS).ended(
        minute=1.2, status=sc.RUN_STATUS_COMPLETED
    )
    run(10).handoff(*FLOW_UNDECLARED, minute=0.1, declared=False)


RUN_BIG = "run-big-10k"
BIG_HANDOFFS = 10_000


def build_big_run(tracers: dict[str, Any], now_ns: int) -> None:
    """One run of BIG_HANDOFFS handoffs ping-ponging between two agents, each requested and
    admitted on one span (a shim that knows both at once), the first a minute ago."""
    tracer = tracers[BILLING]
    t0 = now_ns - MINUTE_NS
    for i in range(BIG_HANDOFFS):
        frm, to = ("triage", "billing") if i % 2 == 0 else ("billing", "triage")
        at = t0 + i * 1_000_000
        tracer.start_span(
            sc.SPAN_REQUEST,
            start_time=at,
            attributes={
                sc.RUN_ID: RUN_BIG,
                sc.HANDOFF_ID: f"h{i + 1:05d}",
                **ev.request(frm, to, turn=i + 1, state_version=i + 1),
                **ev.accept(),
            },
        ).end(end_time=at + 1000)


def seed(
    api: str,
    token: str | None = None,
    build: Callable[[dict[str, Any], int], None] = build_scenario,
    services: tuple[str, ...] = (BILLING, SUPPORT),
) -> int:
    """Send the spans `build(tracers, now_ns)` makes (the scenario by default) to a collector
    with the real OTLP/HTTP exporter, in one export, and wait until they are judged; return
    the span count. `tracers` holds one tracer per name of `services` (its `service.name`)."""
    memory = InMemorySpanExporter()
    providers = {}
    tracers = {}
    for service in services:
        tp = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: service}))
        tp.add_span_processor(SimpleSpanProcessor(memory))
        providers[service] = tp
        tracers[service] = tp.get_tracer(sc.INSTRUMENTATION_SCOPE)
    build(tracers, time.time_ns())
    spans = memory.get_finished_spans()
    headers = {"Authorization": f"Bearer {token}"} if token else None
    exporter = OTLPSpanExporter(endpoint=f"{api}/v1/traces", headers=headers, timeout=30)
    try:
        result = exporter.export(spans)
    finally:
        exporter.shutdown()
        for tp in providers.values():
            tp.shutdown()
    assert result is SpanExportResult.SUCCESS, (
        f"the collector did not take the seed spans: {result}"
    )
    judged(api)  # the pages show verdicts, which trail the acknowledgement
    return len(spans)


# --- running the app -------------------------------------------------------------------


def open_page(
    page: str,
    monkeypatch: pytest.MonkeyPatch,
    api: str,
    *,
    token: str | None = None,
    query: dict[str, str] | None = None,
) -> AppTest:
    """Run the real app (router included) and switch to `page`, reading from `api`."""
    monkeypatch.setenv(ENV_API, api)
    if token is None:
        monkeypatch.delenv(ENV_TOKEN, raising=False)
    else:
        monkeypatch.setenv(ENV_TOKEN, token)
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    if page != "live":
        at.switch_page(f"views/{page}.py")
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(at: AppTest) -> str:
    """Everything a user reads on the page (markdown, alerts, captions, metrics, headers),
    one string, for "the page says X" assertions."""
    parts: list[str] = []
    for kind in (
        "title",
        "header",
        "subheader",
        "markdown",
        "caption",
        "info",
        "success",
        "warning",
        "error",
    ):
        parts.extend(str(e.value) for e in getattr(at, kind))
    parts.extend(f"{m.label}: {m.value}" for m in at.metric)
    return "\n".join(parts)


def tables(at: AppTest) -> list[Any]:
    """The page's tables as DataFrames (a Styler's data when styled)."""
    out = []
    for df in at.dataframe:
        value = df.value
        out.append(getattr(value, "data", value))
    return out


def plotly_specs(at: AppTest) -> list[str]:
    """Each chart's plotly JSON as text, to look for labels and trace types."""
    return [el.proto.spec for el in at.get("plotly_chart")]


# --- the dashboard as a process ----------------------------------------------------------


def stop(procs: list[subprocess.Popen]) -> None:
    """Stop processes a test started, newest first: SIGTERM, then SIGKILL after 10 s."""
    for proc in reversed(procs):
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def wait_http(url: str, proc: subprocess.Popen, log: Path) -> None:
    """Wait until `url` answers 200 (readiness of a process we started, not a timing check)."""

    def status() -> int:
        if proc.poll() is not None:  # pytest.fail is no Exception: it ends the wait at once
            pytest.fail(f"the dashboard exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status

    try:
        eventually(status, lambda s: s == 200, timeout=DASHBOARD_STARTUP_SECONDS, every=0.3)
    except AssertionError:
        pytest.fail(
            f"the dashboard did not answer {url} within {DASHBOARD_STARTUP_SECONDS} s:\n"
            f"{log.read_text()[-3000:]}"
        )


def settle(page: Any) -> None:
    """Wait until Streamlit has finished the run and every element and chart has drawn.

    The signals Streamlit's own browser suite waits on: the app connected, its script run
    over (`data-test-script-state` goes initial -> running -> notRunning, so a fresh load
    cannot pass early), no loading skeleton and no stale element left from an earlier run
    (a page measured while either is shown is not the page a user sees)."""
    page.wait_for_selector("h1", timeout=PAGE_SECONDS * 1000)
    page.locator("[data-testid='stApp'][data-test-connection-state='CONNECTED']").wait_for(
        state="attached", timeout=PAGE_SECONDS * 1000
    )
    page.locator("[data-testid='stApp'][data-test-script-state='notRunning']").wait_for(
        state="attached", timeout=PAGE_SECONDS * 1000
    )
    page.wait_for_function(
        """() => !document.querySelector('[data-testid="stSkeleton"], [data-stale="true"]')""",
        timeout=PAGE_SECONDS * 1000,
    )
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')",
        timeout=PAGE_SECONDS * 1000,
    )
    page.wait_for_function(
        """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
                 .every(c => c.querySelector('.main-svg'))""",
        timeout=PAGE_SECONDS * 1000,
    )


def shot_dir() -> Path:
    """Where browser tests save screenshots: $HANDOFFSCOPE_SCREENSHOT_DIR, else build/screenshots/."""
    configured = os.environ.get("HANDOFFSCOPE_SCREENSHOT_DIR")
    folder = Path(configured) if configured else APP.parents[4] / "build" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


VISIBLE_TIMEOUT_S = 30.0


def wait_visible(api: str, run_ids: tuple[str, ...], token: str | None = None) -> None:
    """Wait until the query API lists the seeded runs (export → visible is asynchronous
    only by the writer's commit; this is readiness, not a timing assertion)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def listed() -> set[str]:
        body = httpx.get(
            f"{api}/api/v1/runs", params={"since": 0, "limit": 1000}, headers=headers, timeout=10
        ).json()
        return {r["run_id"] for r in body.get("runs", [])}

    eventually(
        listed,
        lambda seen: all(any(s.startswith(r) for s in seen) for r in run_ids),
        timeout=VISIBLE_TIMEOUT_S,
        what="seeded runs visible through the API",
    )
