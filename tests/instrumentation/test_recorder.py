"""HandoffRecorder: exact span names, attribute names and value types; allowlist; never raises."""

from __future__ import annotations

from datetime import UTC, datetime

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from handoffscope.instrumentation import HandoffRecorder, fingerprint, stats
from handoffscope.instrumentation import semconv as sc


def only(exporter: InMemorySpanExporter):
    spans = exporter.get_finished_spans()
    assert len(spans) == 1, [s.name for s in spans]
    return spans[0]


def types(attrs) -> dict[str, type]:
    return {k: type(v) for k, v in attrs.items()}


def test_run_started_and_ended(recorder: HandoffRecorder, exporter: InMemorySpanExporter) -> None:
    recorder.run_started("run-1", agent="triage", conversation_id="conv-9")
    recorder.run_ended("run-1", "completed", final_agent="billing", turns=4)
    start, end = exporter.get_finished_spans()
    assert start.name == end.name == sc.SPAN_RUN
    assert types(start.attributes) == {
        sc.RUN_ID: str,
        sc.RUN_STATUS: str,
        sc.RUN_STARTED: int,
        sc.GEN_AI_AGENT_NAME: str,
        sc.GEN_AI_CONVERSATION_ID: str,
    }
    assert start.attributes[sc.RUN_STATUS] == "started"
    assert dict(end.attributes) == {
        sc.RUN_ID: "run-1",
        sc.RUN_STATUS: "completed",
        sc.RUN_FINAL_AGENT: "billing",
        sc.RUN_TURNS: 4,
    }


def test_handoff_requested_all_attributes(
    recorder: HandoffRecorder, exporter: InMemorySpanExporter
) -> None:
    fp = fingerprint({"task": "refund"}, {"v": 3}, key=b"k")
    recorder.handoff_requested(
        "run-1",
        "h1",
        from_agent="triage",
        to_agent="billing",
        turn=2,
        fingerprint=fp,
        state_version=3,
        history_items_forwarded=4,
        history_items_total=9,
        route_declared=True,
        tool_call_id="call_abc",
        required_keys=["order_id", "customer_tier"],
        contract_version="1",
        budget_remaining=5,
        reason="duplicate_charge",
    )
    span = only(exporter)
    assert span.name == sc.SPAN_REQUEST
    assert types(span.attributes) == {
        sc.RUN_ID: str,
        sc.HANDOFF_ID: str,
        sc.FROM_AGENT: str,
        sc.TO_AGENT: str,
        sc.TURN: int,
        sc.FINGERPRINT: str,
        sc.STATE_VERSION: int,
        sc.HISTORY_ITEMS_FORWARDED: int,
        sc.HISTORY_ITEMS_TOTAL: int,
        sc.ROUTE_DECLARED: bool,
        sc.TOOL_CALL_ID: str,
        sc.CONTEXT_REQUIRED_KEYS: tuple,
        sc.CONTRACT_VERSION: str,
        sc.BUDGET_REMAINING: int,
        sc.REASON: str,
    }
    assert span.attributes[sc.CONTEXT_REQUIRED_KEYS] == ("order_id", "customer_tier")
    assert len(span.attributes[sc.FINGERPRINT]) == 16


def test_moments_known_together_share_one_span(
    recorder: HandoffRecorder, exporter: InMemorySpanExporter
) -> None:
    recorder.handoff_requested(
        "r",
        "h",
        from_agent="a",
        to_agent="b",
        goto="b",
        control_before="a",
        control_after="b",
        tool_call_closed=True,
    )
    span = only(exporter)
    assert span.attributes[sc.ROUTE_GOTO] == "b"
    assert span.attributes[sc.CONTROL_AFTER] == "b"
    assert span.attributes[sc.TOOL_CALL_CLOSED] is True


def test_transfer_accept_reject(recorder: HandoffRecorder, exporter: InMemorySpanExporter) -> None:
    recorder.handoff_transferred(
        "r", "h", goto="b", control_before="a", control_after="b", tool_call_closed=False
    )
    recorder.handoff_accepted("r", "h", agent="b", missing_keys=["consent_status"])
    recorder.handoff_rejected(
        "r", "h2", "unauthorized", agent="b", fields=["authority.allowed_tools"]
    )
    transfer, accept, reject = exporter.get_finished_spans()
    assert (transfer.name, accept.name, reject.name) == (
        sc.SPAN_TRANSFER,
        sc.SPAN_ACCEPT,
        sc.SPAN_ACCEPT,
    )
    assert types(transfer.attributes)[sc.TOOL_CALL_CLOSED] is bool
    assert accept.attributes[sc.DESTINATION_STARTED] is True
    assert accept.attributes[sc.CONTEXT_MISSING_KEYS] == ("consent_status",)
    assert accept.attributes[sc.VERDICT] == sc.CONTEXT_INCOMPLETE
    assert reject.attributes[sc.REJECTION_REASON] == "unauthorized"
    assert reject.attributes[sc.REJECTION_FIELDS] == ("authority.allowed_tools",)
    assert reject.attributes[sc.VERDICT] == sc.CONTRACT_REJECTED


def test_wait_and_outcome(recorder: HandoffRecorder, exporter: InMemorySpanExporter) -> None:
    deadline = datetime(2030, 1, 1, tzinfo=UTC)
    recorder.wait_checkpointed(
        "r",
        handoff_id="h",
        owner="ops-lead",
        reason="refund_over_limit",
        deadline=deadline,
        resume_token_id="tok-7",
        state_persisted=True,
    )
    recorder.wait_decided("r", "approved", handoff_id="h", resume_token_id="tok-7")
    recorder.outcome_verified("r", "ticket_closed", True, receipt_id="rcpt-1")
    recorder.outcome_verified("r", "ticket_closed", "fail")
    checkpoint, decided, passed, failed = exporter.get_finished_spans()
    assert checkpoint.name == decided.name == sc.SPAN_WAIT
    assert checkpoint.attributes[sc.WAIT_DEADLINE] == int(deadline.timestamp()) * 10**9
    assert types(checkpoint.attributes)[sc.WAIT_STATE_PERSISTED] is bool
    assert decided.attributes[sc.WAIT_DECISION] == "approved"
    assert passed.name == sc.SPAN_OUTCOME
    assert passed.attributes[sc.OUTCOME_RESULT] == "pass"
    assert failed.attributes[sc.OUTCOME_RESULT] == "fail"
    assert sc.HANDOFF_ID not in passed.attributes


def test_unknown_and_ill_typed_attributes_are_dropped_and_counted(
    recorder: HandoffRecorder, exporter: InMemorySpanExporter
) -> None:
    recorder.emit(
        sc.SPAN_REQUEST,
        {
            sc.RUN_ID: "r",
            sc.HANDOFF_ID: "h",
            "gen_ai.prompt": "hello",
            sc.TURN: "three",  # wrong type
            sc.ROUTE_DECLARED: 1,  # an int is not a bool
            sc.REASON: "a sentence with spaces is not a code",
            sc.TO_AGENT: "x" * 500,  # over the bound
            sc.RUN_STATUS: "bogus",  # outside the vocabulary
        },
    )
    span = only(exporter)
    assert set(span.attributes) == {sc.RUN_ID, sc.HANDOFF_ID}
    dropped = stats.snapshot()["attributes_dropped"]
    assert dropped == {
        "gen_ai.prompt": 1,
        sc.TURN: 1,
        sc.ROUTE_DECLARED: 1,
        sc.REASON: 1,
        sc.TO_AGENT: 1,
        sc.RUN_STATUS: 1,
    }


def test_unknown_keyword_is_dropped_not_raised(
    recorder: HandoffRecorder, exporter: InMemorySpanExporter
) -> None:
    assert recorder.handoff_requested("r", "h", from_agent="a", to_agent="b", prompt="hi") is True
    assert "prompt" not in str(dict(only(exporter).attributes))
    assert stats.snapshot()["attributes_dropped"] == {"prompt": 1}


def test_no_run_id_emits_nothing(recorder: HandoffRecorder, exporter: InMemorySpanExporter) -> None:
    assert recorder.handoff_requested(None, "h", from_agent="a", to_agent="b") is False  # type: ignore[arg-type]
    assert recorder.emit("not.a.contract.span", {sc.RUN_ID: "r"}) is False
    assert exporter.get_finished_spans() == ()


def test_never_raises_even_when_the_tracer_breaks(recorder: HandoffRecorder) -> None:
    class Broken:
        def start_span(self, *a, **k):
            raise RuntimeError("tracer exploded")

    # A real SDK failure mode is hard to provoke on demand; a broken tracer stands in for it.
    recorder._tracer = Broken()  # type: ignore[assignment]
    errors = stats.snapshot()["errors"]
    assert recorder.run_started("r") is False
    assert recorder.outcome_verified("r", "v", True) is False
    assert stats.snapshot()["errors"] == errors + 2


def test_one_run_is_one_trace(recorder: HandoffRecorder, exporter: InMemorySpanExporter) -> None:
    # A trace viewer opens a run whole: its evidence shares one trace id, derived from the
    # run id (the Agents SDK's trace id when the run id is one), another run's differs.
    from handoffscope.instrumentation.recorder import run_trace_id

    recorder.run_started("run-a", agent="triage")
    recorder.handoff_requested("run-a", "h1", from_agent="triage", to_agent="billing")
    recorder.handoff_accepted("run-a", "h1")
    recorder.run_started("run-b", agent="triage")
    sdk = "trace_" + "ab12" * 8
    recorder.run_started(sdk, agent="triage")
    a1, a2, a3, b, c = exporter.get_finished_spans()
    assert a1.context.trace_id == a2.context.trace_id == a3.context.trace_id
    assert a1.context.trace_id == run_trace_id("run-a") != b.context.trace_id
    assert c.context.trace_id == int("ab12" * 8, 16)
    assert all(s.context.trace_flags.sampled for s in (a1, b, c))


def test_inside_an_app_span_evidence_joins_that_trace(
    recorder: HandoffRecorder, exporter: InMemorySpanExporter, provider
) -> None:
    app = provider.get_tracer("the-app")
    with app.start_as_current_span("handle request") as outer:
        recorder.run_started("run-c", agent="triage")
    evidence = [s for s in exporter.get_finished_spans() if s.name == sc.SPAN_RUN][0]
    assert evidence.context.trace_id == outer.get_span_context().trace_id
    assert evidence.parent is not None
    assert evidence.parent.span_id == outer.get_span_context().span_id


def test_evidence_given_a_time_is_a_moment_then(
    recorder: HandoffRecorder, exporter: InMemorySpanExporter
) -> None:
    # A backfilled run is history: its spans start and end when they happened, so the
    # collector does not read it as last seen now (and page about it).
    weeks_ago = 1_700_000_000 * 10**9
    recorder.emit(
        sc.SPAN_RUN, {sc.RUN_ID: "old", sc.RUN_STATUS: "started"}, start_time_ns=weeks_ago
    )
    span = only(exporter)
    assert span.start_time == span.end_time == weeks_ago
