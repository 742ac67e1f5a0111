"""handoffscope's LlamaIndex adapter on LlamaIndex's own multi-agent example: judged, content-free.

LlamaIndex (`llama-index-core`, its `AgentWorkflow` with `can_handoff_to`) runs for real in
its own env (framework_envs.py, `tests/foreign/envs/llama_index/`, with this repository's
instrumentation installed editable from `local.txt`), offline with LlamaIndex's own
`MockFunctionCallingLLM` scripted per agent, instrumented by
`LlamaIndexInstrumentor().instrument(tracer_provider=...)`, exporting OTLP/HTTP protobuf to a
real collector subprocess. The driver (scenario.py) plants a fresh sentinel in the user
message, every tool argument and output, the handoff reasons, the answers and an exception.
Then:

- the driver's own account shows the scenario happened (which agents took turns, how the
  run ended), so a driver that silently did nothing cannot pass;
- the run reads, through the query API, as a careful human reading the workflow's events
  would judge it (`EXPECTED`): the guide's Research -> Write -> Review chain is healthy; a
  Research <-> Write bounce with no new work until `max_iterations` is a loop; a handoff to
  an agent outside `can_handoff_to` (LlamaIndex refuses it, the sender keeps control) is
  `route_rejected`, the declared one after it healthy; a receiver whose model call crashes
  fails the run (`run_failed`) while the handoff that reached it is healthy; sub-agents
  awaited inside the orchestrator's tools are delegations, not handoffs; the run's memory
  session id finds the run as its conversation;
- every span the driver ended reached the collector, none refused;
- the sentinel is in no API answer, not in /metrics, not in the collector's log, in no byte
  of any file it left and no stored value (support.privacy.assert_content_free).

The same runs again with OpenInference's LlamaIndex instrumentor switched on beside the
adapter (`HANDOFFSCOPE_LI_OPENINFERENCE=1`: the framework's content-capturing tracing, which
records every prompt, message, tool argument and output as span attributes, on the same
tracer provider, so its spans travel in the same exports): its spans reach the collector
and are refused (no translator reads LlamaIndex's OpenInference spans: they name agents
only inside content, docs/foreign-spans.md), the verdicts are the same as without it, and
the sentinel is still nowhere.

Behind the `foreign_env` marker (make test-foreign): the env costs a build on first use.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from foreign_support import refused_whole
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc

pytestmark = pytest.mark.foreign_env

R, W, V, ORC = "ResearchAgent", "WriteAgent", "ReviewAgent", "Orchestrator"
H, LOOP = sc.HEALTHY, sc.LOOP
HANDOFF, DELEGATION = sc.KIND_HANDOFF, sc.KIND_DELEGATION
# scenario -> (run verdict, run status, loop, [(from, to, kind, handoff verdict)], authors)
EXPECTED: dict[str, tuple[str, str, bool, list[tuple[str, str, str, str]], list[str]]] = {
    "healthy": (
        sc.UNVERIFIED,
        sc.RUN_STATUS_COMPLETED,
        False,
        [(R, W, HANDOFF, H), (W, V, HANDOFF, H)],
        [R, W, V],
    ),
    # Six model turns (max_iterations=6): five handoffs, every destination started, the
    # task and the work unchanged throughout.
    "pingpong": (
        LOOP,
        sc.RUN_STATUS_MAX_TURNS,
        True,
        [
            (R, W, HANDOFF, H),
            (W, R, HANDOFF, LOOP),
            (R, W, HANDOFF, LOOP),
            (W, R, HANDOFF, LOOP),
            (R, W, HANDOFF, LOOP),
        ],
        [R, W, R, W, R, W],
    ),
    "undeclared": (
        sc.ROUTE_REJECTED,
        sc.RUN_STATUS_COMPLETED,
        False,
        [(R, V, HANDOFF, sc.ROUTE_REJECTED), (R, W, HANDOFF, H)],
        [R, W],
    ),
    # WriteAgent's model call raised: it started (admitted), produced no turn.
    "error": (sc.RUN_FAILED, sc.RUN_STATUS_FAILED, False, [(R, W, HANDOFF, H)], [R]),
    "delegation": (
        sc.UNVERIFIED,
        sc.RUN_STATUS_COMPLETED,
        False,
        [(ORC, R, DELEGATION, H), (ORC, W, DELEGATION, H)],
        [ORC],
    ),
}
ERRORS = {"pingpong": "WorkflowRuntimeError", "error": "RuntimeError"}


def check_outcome(scenario: str, result: dict[str, Any]) -> None:
    """What the scenario must have done, by LlamaIndex's own account (its stream events)."""
    assert result["flushed"] is True
    assert result["spans"] > 0
    assert result["authors"] == EXPECTED[scenario][4], result
    assert result["error"] == ERRORS.get(scenario), result
    if scenario == "delegation":
        assert result["delegated"] == [R, W], result


def check_verdicts(collector: Any, scenario: str) -> list[Any]:
    """The one run, as the query API serves it; returns the answers read (for the sentinel)."""
    verdict, status, loop, hops, _ = EXPECTED[scenario]
    runs = collector.api("/api/v1/runs")["runs"]
    assert len(runs) == 1, runs
    run = collector.run(
        runs[0]["run_id"],
        lambda r: r.get("status") == status and len(r.get("handoffs", [])) == len(hops),
    )
    assert (run["verdict"], run["status"], run["loop"]) == (verdict, status, loop), run
    got = [(h["from_agent"], h["to_agent"], h["kind"], h["verdict"]) for h in run["handoffs"]]
    assert got == hops, run["handoffs"]
    for h in run["handoffs"]:
        # LlamaIndex has no context contract: that boundary is never claimed as passed.
        assert h["boundaries"]["context"] == sc.NOT_OBSERVED, h
        if h["verdict"] == H:
            assert h["destination_started"] is True, h
    return [runs, run]


@pytest.mark.parametrize("scenario", list(EXPECTED))
def test_llama_index_adapter(
    scenario: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    env = framework_env("llama_index")
    run = run_scenario(env, collector, scenario)
    check_outcome(scenario, run.result)
    # The random tail alone: a store that kept a fragment (truncated, re-encoded) is caught too.
    tail = run.sentinel.rsplit("-", 1)[1]

    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    assert collector.metric("handoffscope_spans_rejected_total") == 0
    read = check_verdicts(collector, scenario)
    conversation = run.result.get("conversation")
    if conversation:
        # The memory's session id is the run's conversation: a search by it finds the run.
        found = collector.api("/api/v1/runs", q=conversation, ids="true")["runs"]
        assert [r["run_id"] for r in found] == [read[0][0]["run_id"]], found
        read.append(found)
    assert_content_free(
        collector, tail, stored="llama-index-app", answers={"(verdicts)": json.dumps(read)}
    )


OPENINFERENCE_ENV = {"HANDOFFSCOPE_LI_OPENINFERENCE": "1"}
OPENINFERENCE_SCOPE = "openinference.instrumentation.llama_index"


@pytest.mark.parametrize("scenario", ["healthy", "pingpong", "error", "delegation"])
def test_llama_index_adapter_beside_openinference_content_capture(
    scenario: str, framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    run = run_scenario(framework_env("llama_index"), collector, scenario, OPENINFERENCE_ENV)
    check_outcome(scenario, run.result)
    assert collector.metric("handoffscope_spans_received_total") == run.result["spans"]
    # OpenInference's spans (the content) reached the collector and were refused whole:
    # the sentinel check below is not vacuous.
    listing = refused_whole(collector, OPENINFERENCE_SCOPE)
    # The adapter's verdicts, as without OpenInference (EXPECTED).
    read = [listing, *check_verdicts(collector, scenario)]
    tail = run.sentinel.rsplit("-", 1)[1]
    assert_content_free(
        collector, tail, stored="llama-index-app", answers={"(verdicts)": json.dumps(read)}
    )


def test_uninstrument_reports_nothing(
    framework_env: Any, run_scenario: Any, collector: Any
) -> None:
    """After `uninstrument()` the guide's healthy run still runs, and nothing is reported."""
    run = run_scenario(framework_env("llama_index"), collector, "uninstrumented")
    assert run.result["authors"] == [R, W, V], run.result
    assert run.result["error"] is None, run.result
    assert run.result["spans"] == 0, run.result
    assert collector.api("/api/v1/runs")["runs"] == []
