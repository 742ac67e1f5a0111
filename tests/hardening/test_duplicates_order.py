"""Duplicates and order: re-sent batches, shuffled evidence and restarts change no verdict.

One scenario holds a run for every verdict of DESIGN §4 (and the run-level facts: loop,
false completion, pending approvals, failure), each as the evidence spans a shim would
emit, with fixed ids and timestamps. A clean collector receives it in order, one export
per run. A second collector receives the very same spans shuffled across runs and
handoffs (outcomes before requests, run ends before run starts), cut into random
batches, each batch sent one to three times over OTLP/HTTP protobuf, OTLP/JSON and gRPC,
with a graceful restart and a SIGKILL + restart in the middle. Both must then answer
/api/v1/runs/{id} with the same verdicts, statuses, flags and per-handoff judgements, and
store each span once.
"""

from __future__ import annotations

import random
import time
from typing import Any

import grpc
import pytest
from hardening_support import SECOND_NS, stored_keys
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from support import evidence as ev
from support.otlp import JSON, export_request, otlp_span, to_otlp_json

from handoffscope.instrumentation import semconv as sc

EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
MINUTE_NS = 60 * SECOND_NS


class Scenario:
    """Spans of many runs, built as a shim would emit them."""

    def __init__(self, now_ns: int) -> None:
        self.now = now_ns
        self.spans: list[Span] = []

    def span(self, name: str, at_ns: int, attrs: dict[str, Any]) -> None:
        self.spans.append(otlp_span(name, attrs, start_ns=at_ns - 1000, end_ns=at_ns))

    def run(self, run_id: str, *, minutes_ago: float, agent: str = "triage") -> int:
        t0 = self.now - int(minutes_ago * MINUTE_NS)
        self.span(
            sc.SPAN_RUN,
            t0,
            {
                sc.RUN_ID: run_id,
                sc.RUN_STATUS: sc.RUN_STATUS_STARTED,
                sc.RUN_STARTED: t0,
                sc.GEN_AI_AGENT_NAME: agent,
            },
        )
        return t0

    def handoff(
        self,
        run_id: str,
        hid: str,
        at: int,
        *,
        src: str = "triage",
        dst: str = "billing",
        state_version: int = 1,
        fingerprint: str = "fp-1",
        declared: bool = True,
        goto: str | None = None,
        before: str | None = None,
        after: str | None = None,
        closed: bool = True,
        missing: tuple[str, ...] = (),
        rejected: str | None = None,
        accepted: bool = True,
    ) -> None:
        self.span(
            sc.SPAN_REQUEST,
            at,
            ev.request(
                src,
                dst,
                turn=1,
                fingerprint=fingerprint,
                state_version=state_version,
                declared=declared,
                **{
                    sc.RUN_ID: run_id,
                    sc.HANDOFF_ID: hid,
                    sc.TOOL_CALL_ID: f"call-{hid}",
                    sc.CONTEXT_REQUIRED_KEYS: ["order_id"],
                },
            ),
        )
        self.span(
            sc.SPAN_TRANSFER,
            at + SECOND_NS,
            {
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: hid,
                sc.ROUTE_GOTO: goto or dst,
                sc.CONTROL_BEFORE: before or src,
                sc.CONTROL_AFTER: after or dst,
                sc.TOOL_CALL_CLOSED: closed,
            },
        )
        if rejected:
            self.span(
                sc.SPAN_ACCEPT,
                at + 2 * SECOND_NS,
                ev.accept(
                    started=None,
                    rejection=rejected,
                    **{
                        sc.RUN_ID: run_id,
                        sc.HANDOFF_ID: hid,
                        sc.VERDICT: sc.CONTRACT_REJECTED,
                        sc.GEN_AI_AGENT_NAME: dst,
                    },
                ),
            )
        elif accepted:
            accept = ev.accept(**{sc.RUN_ID: run_id, sc.HANDOFF_ID: hid, sc.GEN_AI_AGENT_NAME: dst})
            if missing:
                accept[sc.CONTEXT_MISSING_KEYS] = list(missing)
            self.span(sc.SPAN_ACCEPT, at + 2 * SECOND_NS, accept)

    def outcome(self, run_id: str, at: int, result: str) -> None:
        self.span(
            sc.SPAN_OUTCOME,
            at,
            ev.outcome(
                result, verifier="refund_check", receipt=f"rcpt-{run_id}", **{sc.RUN_ID: run_id}
            ),
        )

    def ended(self, run_id: str, at: int, status: str, final_agent: str = "billing") -> None:
        self.span(
            sc.SPAN_RUN,
            at,
            {
                sc.RUN_ID: run_id,
                sc.RUN_STATUS: status,
                sc.RUN_FINAL_AGENT: final_agent,
                sc.RUN_TURNS: 3,
            },
        )

    def wait(
        self, run_id: str, hid: str, at: int, *, deadline_ns: int | None, owner: str | None = "ops"
    ) -> None:
        attrs: dict[str, Any] = {
            sc.RUN_ID: run_id,
            sc.HANDOFF_ID: hid,
            sc.WAIT_REASON: "refund_over_limit",
            sc.WAIT_RESUME_TOKEN_ID: f"resume-{run_id}",
            sc.WAIT_STATE_PERSISTED: True,
        }
        if owner:
            attrs[sc.WAIT_OWNER] = owner
        if deadline_ns is not None:
            attrs[sc.WAIT_DEADLINE] = deadline_ns
        self.span(sc.SPAN_WAIT, at, attrs)


def build_scenario(tag: str) -> tuple[list[Span], list[str]]:
    s = Scenario(time.time_ns())
    s_ = SECOND_NS
    runs = []

    def run(name: str, minutes_ago: float) -> tuple[str, int]:
        run_id = f"{tag}-{name}"
        runs.append(run_id)
        return run_id, s.run(run_id, minutes_ago=minutes_ago)

    r, t = run("healthy", 20)
    s.handoff(r, "h1", t + 10 * s_)
    s.outcome(r, t + 30 * s_, sc.OUTCOME_PASS)
    s.ended(r, t + 40 * s_, sc.RUN_STATUS_COMPLETED)

    r, t = run("route", 19)
    s.handoff(r, "h1", t + 10 * s_, declared=False)
    r, t = run("goto", 19)
    s.handoff(r, "h1", t + 10 * s_, goto="refunds")
    r, t = run("stale", 18)
    s.handoff(r, "h1", t + 10 * s_, before="someone_else")
    r, t = run("open_tool", 17)
    s.handoff(r, "h1", t + 10 * s_, closed=False)
    r, t = run("context", 16)
    s.handoff(r, "h1", t + 10 * s_, missing=("order_id",))
    r, t = run("rejected", 15)
    s.handoff(r, "h1", t + 10 * s_, rejected=sc.REJECTION_STALE)
    r, t = run("not_started", 14)
    s.handoff(r, "h1", t + 10 * s_, accepted=False)

    # A later healthy handoff must not hide an earlier failure.
    r, t = run("earlier_failure", 13)
    s.handoff(r, "h1", t + 10 * s_, closed=False)
    s.handoff(r, "h2", t + 20 * s_, src="billing", dst="refunds")

    r, t = run("loop", 12)
    s.handoff(
        r, "h1", t + 10 * s_, src="triage", dst="billing", fingerprint="fp-loop", state_version=4
    )
    s.handoff(
        r, "h2", t + 20 * s_, src="billing", dst="triage", fingerprint="fp-back", state_version=4
    )
    s.handoff(
        r, "h3", t + 30 * s_, src="triage", dst="billing", fingerprint="fp-loop", state_version=4
    )
    s.ended(r, t + 40 * s_, sc.RUN_STATUS_MAX_TURNS)

    r, t = run("false_complete", 11)
    s.handoff(r, "h1", t + 10 * s_)
    s.ended(r, t + 40 * s_, sc.RUN_STATUS_COMPLETED)
    r, t = run("verifier_failed", 11)
    s.handoff(r, "h1", t + 10 * s_)
    s.outcome(r, t + 30 * s_, sc.OUTCOME_FAIL)
    s.ended(r, t + 40 * s_, sc.RUN_STATUS_COMPLETED)

    r, t = run("waiting", 10)
    s.handoff(r, "h1", t + 10 * s_, dst="approver")
    s.wait(r, "h1", t + 20 * s_, deadline_ns=s.now + 60 * MINUTE_NS)
    r, t = run("overdue", 30)
    s.handoff(r, "h1", t + 10 * s_, dst="approver")
    s.wait(r, "h1", t + 20 * s_, deadline_ns=s.now - 5 * MINUTE_NS)
    r, t = run("uncertain", 9)
    s.handoff(r, "h1", t + 10 * s_, dst="approver")
    s.wait(r, "h1", t + 20 * s_, deadline_ns=None, owner=None)

    r, t = run("failed", 8)
    s.handoff(r, "h1", t + 10 * s_)
    s.ended(r, t + 40 * s_, sc.RUN_STATUS_FAILED)
    return s.spans, runs


def judgement(collector: Any, run_id: str) -> dict[str, Any]:
    """What a run's detail says, minus clocks: verdicts, facts, per-handoff judgements."""
    run = collector.api(f"/api/v1/runs/{run_id}")
    return {
        "verdict": run["verdict"],
        "status": run["status"],
        "final_agent": run["final_agent"],
        "path": run["path"],
        "loop": run["loop"],
        "loop_cycle": run["loop_cycle"],
        "false_complete": run["false_complete"],
        "pending_approvals": run["pending_approvals"],
        "outcomes": sorted((o["handoff_id"], o["verifier"], o["result"]) for o in run["outcomes"]),
        "waits": sorted((w["handoff_id"], w["verdict"], tuple(w["missing"])) for w in run["waits"]),
        "handoffs": [
            (
                h["handoff_id"],
                h["from_agent"],
                h["to_agent"],
                h["verdict"],
                h["failed_boundary"],
                h["boundaries"],
                h["missing_keys"],
                h["rejection_reason"],
            )
            for h in run["handoffs"]
        ],
    }


def send(collector: Any, transport: str, spans: list[Span]) -> None:
    request = export_request(spans, service="order-app")
    if transport == "grpc":
        with grpc.insecure_channel(collector.grpc_endpoint) as channel:
            channel.unary_unary(EXPORT_METHOD)(request.SerializeToString(), timeout=30)
        return
    if transport == "json":
        response = collector.post_traces(to_otlp_json(request), JSON)
    else:
        response = collector.post_traces(request.SerializeToString())
    assert response.status_code == 200, response.text


def clean_judgements(collector_factory: Any, tag: str) -> tuple[list[Span], dict[str, dict]]:
    spans, runs = build_scenario(tag)
    clean = collector_factory()
    by_run: dict[str, list[Span]] = {}
    for span in spans:
        run_id = next(kv.value.string_value for kv in span.attributes if kv.key == sc.RUN_ID)
        by_run.setdefault(run_id, []).append(span)
    for run_spans in by_run.values():
        send(clean, "protobuf", run_spans)
    judged = {run_id: judgement(clean, run_id) for run_id in runs}
    clean.stop()
    return spans, judged


def messy_delivery(collector: Any, spans: list[Span], rng: random.Random) -> None:
    """Shuffled, batched at random, re-sent, across transports, with two restarts."""
    shuffled = list(spans)
    rng.shuffle(shuffled)
    batches = []
    while shuffled:
        size = rng.randint(1, 7)
        batches.append(shuffled[:size])
        shuffled = shuffled[size:]
    restart_at = {len(batches) // 3: "term", 2 * len(batches) // 3: "kill"}
    for i, batch in enumerate(batches):
        for _ in range(rng.randint(1, 3)):
            send(collector, rng.choice(("protobuf", "json", "grpc")), batch)
        # A retry of an earlier batch, long after it was first sent.
        if i and rng.random() < 0.3:
            send(collector, "protobuf", batches[rng.randrange(i)])
        if restart_at.get(i) == "kill":
            collector.kill()
            collector.restart()
        elif restart_at.get(i) == "term":
            collector.restart()


def check_same_verdicts(collector_factory: Any, seed: int) -> None:
    rng = random.Random(seed)
    print(f"duplicates-and-order seed {seed}")
    spans, clean = clean_judgements(collector_factory, "run")
    # Sanity: the scenario does produce the verdicts it is meant to, so equality below is
    # not two empty answers agreeing.
    verdicts = {j["verdict"] for j in clean.values()}
    assert {
        sc.HEALTHY,
        sc.ROUTE_REJECTED,
        sc.STALE_CONTROL,
        sc.OPEN_TOOL_PROTOCOL,
        sc.CONTEXT_INCOMPLETE,
        sc.CONTRACT_REJECTED,
        sc.DESTINATION_NOT_STARTED,
        sc.LOOP,
        sc.FALSE_COMPLETE,
        sc.APPROVAL_OVERDUE,
        sc.WAIT_UNCERTAIN,
        sc.WAITING_ON_APPROVAL,
    } <= verdicts, verdicts

    messy = collector_factory()
    messy_delivery(messy, spans, rng)
    for run_id, expected in clean.items():
        assert judgement(messy, run_id) == expected, run_id
    assert messy.stop() == 0
    stored = stored_keys(messy.store)
    assert set(stored.values()) == {1}
    assert len(stored) == len(spans)


def test_resent_shuffled_and_restarted_evidence_gets_the_clean_verdicts(
    collector_factory: Any,
) -> None:
    check_same_verdicts(collector_factory, random.randrange(2**32))


@pytest.mark.soak
@pytest.mark.timeout(3600)
def test_duplicates_and_order_soak(collector_factory: Any) -> None:
    for _ in range(15):
        check_same_verdicts(collector_factory, random.randrange(2**32))
