"""GenAI agent spans under a scope no translator claims: translated by meaning.

Built by hand in the shapes the conventions define (and Pydantic AI emits: read off real
exports, tests/foreign/test_genai_spans.py runs the real framework), under scope names no
translator claims, through the real registry and the collector's real read path
(`ExportHandler.read_protobuf`: the lean read decides whether an export needs the full
parse). Contract spans under an unknown scope and spans of no GenAI meaning keep their
old fate: passed untouched, refused by name.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from support.otlp import export_request, kv, otlp_span

from handoffscope.collector.metrics import Metrics
from handoffscope.collector.otlp.lean_trace import parse_lean
from handoffscope.collector.pipeline import ExportHandler
from handoffscope.collector.processor.allowlist import Allowlist, service_of
from handoffscope.collector.processor.translate import Translators
from handoffscope.collector.processor.translate.base import ForeignSpan
from handoffscope.collector.processor.translate.genai import GenAiTranslator
from handoffscope.instrumentation import semconv as sc

TRACE = os.urandom(16)
T0 = 1_700_000_000 * 10**9
UNKNOWN = "acme.agents"
"""A scope name no translator claims."""


class Clock:
    """Start and end times in call order, so a parent made after its children ends later."""

    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> int:
        self.t += 1000
        return self.t


def span(
    name: str,
    parent: Span | None = None,
    *,
    start: int,
    end: int,
    error: str = "",
    exception: str = "",
    **attrs: Any,
) -> Span:
    out = otlp_span(
        name,
        {key.replace("__", "."): value for key, value in attrs.items()},
        trace_id=TRACE,
        span_id=os.urandom(8),
        parent_span_id=b"" if parent is None else parent.span_id,
        start_ns=start,
        end_ns=end,
        error=error,
    )
    if exception:
        out.events.add(name="exception", attributes=[kv("exception.type", exception)])
    return out


def agent(name: str, parent: Span | None, start: int, end: int, **kw: Any) -> Span:
    return span(
        f"invoke_agent {name}",
        parent,
        start=start,
        end=end,
        gen_ai__operation__name="invoke_agent",
        gen_ai__agent__name=name,
        gen_ai__conversation__id="conv-1",
        **kw,
    )


def tool(name: str, holder: str, parent: Span, start: int, end: int, **kw: Any) -> Span:
    return span(
        f"execute_tool {name}",
        parent,
        start=start,
        end=end,
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name=name,
        gen_ai__tool__call__id=f"call-{name}",
        gen_ai__agent__name=holder,
        gen_ai__tool__call__arguments='{"secret": "CONTENT"}',
        **kw,
    )


def translated(request: ExportTraceServiceRequest) -> list[dict[str, Any]]:
    out = []
    for s in request.resource_spans[0].scope_spans[0].spans:
        values = {kv.key: getattr(kv.value, kv.value.WhichOneof("value")) for kv in s.attributes}
        if sc.UNOBSERVED in values:
            values[sc.UNOBSERVED] = [v.string_value for v in values[sc.UNOBSERVED].values]
        out.append({"name": s.name, **values})
    return out


def swarm(clock: Clock) -> list[Span]:
    """triage hands off by `transfer_to_billing`; billing runs after it, as a sibling."""
    root_start = clock()
    triage_start = clock()
    chat = span("chat m", None, start=clock(), end=clock(), gen_ai__operation__name="chat")
    handoff_start = clock()
    handoff_end = clock()
    triage_end = clock()
    billing_start = clock()
    billing_end = clock()
    root = span(
        "invoke_workflow support",
        start=root_start,
        end=clock(),
        gen_ai__operation__name="invoke_workflow",
    )
    triage = agent("triage", root, triage_start, triage_end)
    chat.parent_span_id = triage.span_id
    transfer = tool("transfer_to_billing", "triage", triage, handoff_start, handoff_end)
    billing = agent("billing", root, billing_start, billing_end)
    return [chat, transfer, triage, billing, root]


def test_an_unknown_scope_with_genai_spans_is_translated_by_meaning() -> None:
    spans = swarm(Clock())
    request = export_request(spans, service="app", scope=UNKNOWN)
    result = Translators().translate(request, service_of)
    assert result is not None
    assert (result.foreign, result.by_source) == (5, {"genai": 5})
    assert result.scopes_read == {("app", UNKNOWN, "genai"): 5}
    evidence = translated(request)
    assert result.emitted == len(evidence)
    assert all(e[sc.SOURCE] == "genai" and e[sc.RUN_ID] == TRACE.hex() for e in evidence)
    assert not any("CONTENT" in str(e) for e in evidence)  # arguments are never read
    by_name = [(e["name"], e.get(sc.GEN_AI_AGENT_NAME) or e.get(sc.HANDOFF_ID)) for e in evidence]
    assert by_name == [
        (sc.SPAN_USAGE, "triage"),  # chat: one model call, triage's (its invoke_agent parent)
        (sc.SPAN_REQUEST, "call-transfer_to_billing"),
        (sc.SPAN_ACCEPT, "triage"),  # triage handed off: not the final agent
        (sc.SPAN_RUN, None),
        (sc.SPAN_ACCEPT, "billing"),
        (sc.SPAN_RUN, None),  # the root: the run's end
    ]
    usage_ev = evidence[0]
    assert usage_ev[sc.USAGE_MODEL_CALLS] == 1
    assert sc.GEN_AI_USAGE_INPUT_TOKENS not in usage_ev  # not reported: absent, not 0
    request_ev = evidence[1]
    assert (request_ev[sc.FROM_AGENT], request_ev[sc.TO_AGENT], request_ev[sc.KIND]) == (
        "triage",
        "billing",
        sc.KIND_HANDOFF,
    )
    assert request_ev[sc.TOOL_CALL_ID] == "call-transfer_to_billing"
    assert request_ev[sc.GEN_AI_CONVERSATION_ID] == "conv-1"
    assert evidence[3][sc.RUN_FINAL_AGENT] == "billing"
    assert evidence[5][sc.RUN_STATUS] == sc.RUN_STATUS_COMPLETED


def _lean_equals_full(request: ExportTraceServiceRequest) -> Any:
    body = request.SerializeToString()
    handler = ExportHandler(Allowlist(), None, Metrics())  # type: ignore[arg-type]
    lean = handler.read_protobuf(body)
    full = handler.read(ExportTraceServiceRequest.FromString(body))
    assert asdict(lean) == asdict(full)
    return lean


def test_the_read_path_takes_genai_spans_of_an_unknown_scope_and_keeps_them() -> None:
    batch = _lean_equals_full(export_request(swarm(Clock()), service="app", scope=UNKNOWN))
    assert (batch.received, batch.rejected) == (5, 0)
    # triage twice: its handoff's accept and its chat's usage
    assert sorted(a for a in batch.columns["gen_ai_agent_name"] if a) == [
        "billing",
        "triage",
        "triage",
    ]


def test_contract_spans_under_an_unknown_scope_pass_untouched() -> None:
    """A shim in another language, with its own scope name, beside GenAI spans."""
    clock = Clock()
    contract = otlp_span(
        sc.SPAN_REQUEST,
        {sc.HANDOFF_ID: "h-1", sc.RUN_ID: "r-1", sc.FROM_AGENT: "a", sc.TO_AGENT: "b"},
        trace_id=TRACE,
        span_id=os.urandom(8),
        start_ns=clock(),
        end_ns=clock(),
    )
    genai = agent("a", None, clock(), clock())
    request = export_request([contract, genai], service="app", scope="acme.shim.go")
    result = Translators().translate(request, service_of)
    assert result is not None and result.foreign == 1
    assert result.scopes_read == {("app", "acme.shim.go", "genai"): 1}
    kept = request.resource_spans[0].scope_spans[0].spans[0]
    assert kept == contract  # byte for byte
    assert result.emitted == len(request.resource_spans[0].scope_spans[0].spans) - 1
    batch = _lean_equals_full(
        export_request([contract], service="app", scope="acme.shim.go")
    )  # alone: no GenAI span, the lean path; kept as evidence
    assert (batch.received, batch.rejected, batch.count) == (1, 0, 1)


def test_spans_of_no_genai_meaning_under_an_unknown_scope_are_still_refused() -> None:
    clock = Clock()
    plain = span("GET /users", start=clock(), end=clock(), http__method="GET")
    request = export_request([plain], service="app", scope=UNKNOWN)
    assert Translators().translate(request, service_of) is None
    batch = _lean_equals_full(export_request([plain], service="app", scope=UNKNOWN))
    assert (batch.received, batch.rejected, batch.count) == (1, 1, 0)
    assert "name not in the handoff contract" in batch.error_message


def test_the_shims_own_scope_is_never_read_by_meaning() -> None:
    clock = Clock()
    shim = agent("a", None, clock(), clock())  # GenAI-looking, under the shim's scope
    request = export_request([shim], service="app", scope=sc.INSTRUMENTATION_SCOPE)
    assert Translators().translate(request, service_of) is None
    assert not Translators().claims_any(parse_lean(request.SerializeToString()))


def test_by_meaning_can_be_switched_off() -> None:
    request = export_request(swarm(Clock()), service="app", scope=UNKNOWN)
    assert Translators(by_meaning=None).translate(request, service_of) is None


def nested(scope: str, tool_name: str, *, error: str = "", exception: str = "") -> list[dict]:
    """caller → execute_tool `tool_name` → invoke_agent callee (Pydantic AI's shape)."""
    clock = Clock()
    caller_start, tool_start, callee_start = clock(), clock(), clock()
    callee_end, tool_end, caller_end = clock(), clock(), clock()
    caller = agent("caller", None, caller_start, caller_end, error=error, exception=exception)
    call = tool(tool_name, "caller", caller, tool_start, tool_end, error=error)
    callee = agent("callee", call, callee_start, callee_end, error=error, exception=exception)
    request = export_request([callee, call, caller], service="app", scope=scope)
    assert Translators().translate(request, service_of) is not None
    return translated(request)


def test_an_agent_run_inside_another_agents_tool_is_a_delegation() -> None:
    evidence = nested(UNKNOWN, "joke_factory")
    callee = evidence[0]
    assert callee["name"] == sc.SPAN_REQUEST
    assert (callee[sc.KIND], callee[sc.FROM_AGENT], callee[sc.TO_AGENT]) == (
        sc.KIND_DELEGATION,
        "caller",
        "callee",
    )
    assert callee[sc.DESTINATION_STARTED] is True
    # `joke_factory` is no handoff tool: its span gives nothing. The delegate is no
    # arrival (it would admit some other request); the caller kept control, so it is the
    # final agent and the delegate never is.
    assert [e["name"] for e in evidence if e["name"] == sc.SPAN_REQUEST] == [sc.SPAN_REQUEST]
    assert [e[sc.GEN_AI_AGENT_NAME] for e in evidence if e["name"] == sc.SPAN_ACCEPT] == ["caller"]
    assert [e[sc.RUN_FINAL_AGENT] for e in evidence if sc.RUN_FINAL_AGENT in e] == ["caller"]


@pytest.mark.parametrize(
    ("scope", "tool_name", "kind"),
    [
        # Pydantic AI's output tool: an agent run under it is a hand-off by output function.
        ("pydantic-ai", "final_result", sc.KIND_HANDOFF),
        ("pydantic-ai", "final_result_hand_off_to_callee", sc.KIND_HANDOFF),
        # The hint is Pydantic AI's: elsewhere `final_result` is a tool like any other.
        (UNKNOWN, "final_result", sc.KIND_DELEGATION),
        # The handoff-tool rule holds for any scope.
        (UNKNOWN, "handoff_to_agent", sc.KIND_HANDOFF),
    ],
)
def test_handoff_tools_and_output_tools(scope: str, tool_name: str, kind: str) -> None:
    evidence = nested(scope, tool_name)
    callee = evidence[0]
    assert (callee["name"], callee[sc.KIND]) == (sc.SPAN_REQUEST, kind)
    assert (callee[sc.FROM_AGENT], callee[sc.TO_AGENT]) == ("caller", "callee")
    finals = [e[sc.RUN_FINAL_AGENT] for e in evidence if sc.RUN_FINAL_AGENT in e]
    if kind == sc.KIND_HANDOFF:
        # One handoff id on both sides: the tool call's.
        assert callee[sc.HANDOFF_ID] == f"call-{tool_name}"
        assert finals == ["callee"]  # the caller handed off: not the final agent
    else:
        assert finals == ["caller"]


def test_a_receiver_answering_through_its_own_output_tool_is_the_final_agent() -> None:
    """Pydantic AI's receiver answers by calling its own `final_result`: an output tool with
    no agent run under it is the agent answering, not a hand-off."""
    clock = Clock()
    times = [clock() for _ in range(8)]
    router = agent("router", None, times[0], times[7])
    call = tool("final_result_hand_off_to_sql", "router", router, times[1], times[6])
    sql = agent("sql", call, times[2], times[5])
    answer = tool("final_result", "sql", sql, times[3], times[4])
    request = export_request([answer, sql, call, router], service="app", scope="pydantic-ai")
    Translators().translate(request, service_of)
    evidence = translated(request)
    assert [e[sc.RUN_FINAL_AGENT] for e in evidence if sc.RUN_FINAL_AGENT in e] == ["sql"]
    assert {(e[sc.FROM_AGENT], e[sc.TO_AGENT]) for e in evidence if sc.TO_AGENT in e} == {
        ("router", "sql")
    }


def test_the_tool_span_requests_the_destination_its_name_names() -> None:
    evidence = nested("pydantic-ai", "final_result_hand_off_to_callee")
    requests = [e for e in evidence if e["name"] == sc.SPAN_REQUEST]
    assert [(r[sc.HANDOFF_ID], r[sc.TO_AGENT]) for r in requests] == [
        ("call-final_result_hand_off_to_callee", "callee"),  # from the agent run
        ("call-final_result_hand_off_to_callee", "callee"),  # from the tool span's name
    ]


@pytest.mark.parametrize(
    ("exception", "status"),
    [
        ("pydantic_ai.exceptions.UsageLimitExceeded", sc.RUN_STATUS_MAX_TURNS),
        ("RuntimeError", sc.RUN_STATUS_FAILED),
    ],
)
def test_a_failed_root_ends_the_run_failed_or_at_its_limit(exception: str, status: str) -> None:
    evidence = nested("pydantic-ai", "final_result", error="boom", exception=exception)
    statuses = {e[sc.RUN_STATUS] for e in evidence if sc.RUN_STATUS in e}
    assert statuses == {status}
    root = [e for e in evidence if sc.RUN_STARTED in e]
    assert len(root) == 1 and root[0][sc.RUN_STATUS] == status
    # A failed handoff tool call whose agent ran is still the handoff (its agent run says so).
    assert [e[sc.TO_AGENT] for e in evidence if e["name"] == sc.SPAN_REQUEST] == ["callee"]


def test_the_registry_lists_genai_with_no_scope() -> None:
    assert GenAiTranslator.source == "genai" and GenAiTranslator.scopes == ()
    assert GenAiTranslator.label == "OpenTelemetry GenAI"


@pytest.mark.parametrize(
    ("scope", "name", "expected"),
    [
        (UNKNOWN, "transfer_to_billing", (True, "billing")),
        (UNKNOWN, "Handoff_To_Billing", (True, "Billing")),  # the name kept verbatim
        (UNKNOWN, "hand_off_to_sql_agent", (True, "sql_agent")),
        (UNKNOWN, "transfer_to_agent", (True, None)),  # the destination is in the arguments
        (UNKNOWN, "handoff", (True, None)),
        (UNKNOWN, "transfer_to_a b", (True, None)),  # not a code: no destination read
        (UNKNOWN, "lookup", (False, None)),
        (UNKNOWN, "final_result_hand_off_to_sql_agent", (False, None)),  # not Pydantic AI
        ("pydantic-ai", "final_result_hand_off_to_sql_agent", (True, "sql_agent")),
        ("pydantic-ai", "final_result", (False, None)),  # the output tool: a hint, not a name
    ],
)
def test_the_handoff_tool_rule(scope: str, name: str, expected: tuple[bool, str | None]) -> None:
    clock = Clock()
    call = span(
        f"execute_tool {name}",
        start=clock(),
        end=clock(),
        gen_ai__operation__name="execute_tool",
        gen_ai__tool__name=name,
    )
    assert GenAiTranslator().handoff_tool(ForeignSpan(call, None, scope)) == expected
