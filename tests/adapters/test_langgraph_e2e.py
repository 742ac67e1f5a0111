"""LangGraph adapter end to end: real graphs -> real OTLP/HTTP exporter -> real collector
subprocess -> DuckDB file -> query API.

Every scenario of `langgraph_scenarios.py` runs into one collector through the shipped
pipeline (`configure()`: OTLP/HTTP, bounded batch processor); the verdicts are read back
through `GET /api/v1/runs/{run_id}` and `GET /api/v1/approvals` (docs/api.md). Then the
sentinel planted in every message, tool argument, tool output and state value is searched
for in the encoded OTLP bytes, every API answer, the DuckDB file's bytes and every text
column of its tables. The shipped example (`examples/langgraph_app.py`) runs into the same
collector as a user would run it. (One collector for all: its start-up is most of the cost.)
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import langgraph_scenarios as scenarios
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError
from langgraph.types import Command
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc

SENTINEL = scenarios.SENTINEL
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "langgraph_app.py"


def test_verdicts_through_the_collector_and_no_content_anywhere(
    collector: Any, langgraph_e2e: Any
) -> None:
    ins, sent, answers = langgraph_e2e.ins, langgraph_e2e.sent, langgraph_e2e.answers
    get, ended = langgraph_e2e.get, langgraph_e2e.ended

    try:
        ids: dict[str, str] = {}

        def verify(state: Any) -> dict:
            ins.record_outcome("refund_posted", True, receipt_id="rcpt-e2e-1")
            return {}

        scenarios.healthy(verify).invoke(scenarios.first_input())
        ids["healthy"] = ins.run_id()
        with pytest.raises(GraphRecursionError):
            scenarios.ping_pong().invoke(scenarios.first_input(), {"recursion_limit": 6})
        ids["ping_pong"] = ins.run_id()
        scenarios.back_and_forth_with_progress().invoke(scenarios.first_input())
        ids["progress"] = ins.run_id()
        scenarios.broken(close=False).invoke(scenarios.first_input())
        ids["open_tool"] = ins.run_id()
        scenarios.broken(set_active=False).invoke(scenarios.first_input())
        ids["stale"] = ins.run_id()
        scenarios.node_commands().invoke(scenarios.first_input())
        ids["undeclared"] = ins.run_id()
        graph = scenarios.approval(InMemorySaver())
        config = {"configurable": {"thread_id": "e2e-approval-thread"}}
        out = graph.invoke(scenarios.first_input(), config)
        (itr,) = out["__interrupt__"]
        assert SENTINEL in json.dumps(itr.value)  # content was in the app
        ids["approval"] = ins.run_id(config)

        # -- a healthy handoff with a passing outcome
        run = get(ids["healthy"], ended("completed", 1))
        assert (run["verdict"], run["loop"], run["false_complete"]) == (sc.HEALTHY, False, False)
        assert run["service"] == "adapter-e2e"
        assert (run["final_agent"], run["turns"], run["path"]) == (
            "billing",
            2,
            ["triage", "billing"],
        )
        (h,) = run["handoffs"]
        assert (h["from_agent"], h["to_agent"], h["verdict"]) == ("triage", "billing", sc.HEALTHY)
        assert h["failed_boundary"] is None and h["route_declared"] is True
        assert [o["result"] for o in run["outcomes"]] == [sc.OUTCOME_PASS]

        # -- ping-pong until the recursion limit: a loop, and max_turns
        run = get(ids["ping_pong"], ended("max_turns", 6))
        assert (run["verdict"], run["loop"]) == (sc.LOOP, True)
        assert run["loop_cycle"] == ["triage", "billing", "triage"]
        verdicts = [h["verdict"] for h in run["handoffs"]]
        assert verdicts == [sc.HEALTHY] + [sc.LOOP] * 5
        # (The last handoff's destination never started — the limit stopped the graph
        # first; past the collector's grace window it reads destination_not_started.)

        # -- handing back after real work: progress, not a loop; but no verifier ran, so
        # the run's "completed" is a claim without proof
        run = get(ids["progress"], ended("completed", 3))
        assert (run["loop"], run["false_complete"]) == (False, True)
        assert [h["verdict"] for h in run["handoffs"]] == [sc.HEALTHY] * 2 + [sc.FALSE_COMPLETE]
        assert run["verdict"] == sc.FALSE_COMPLETE

        # -- the handoff's own tool call never closed by a ToolMessage
        run = get(ids["open_tool"], ended("completed", 1))
        (h,) = run["handoffs"]
        assert (h["verdict"], h["failed_boundary"]) == (sc.OPEN_TOOL_PROTOCOL, "tool_protocol")
        assert h["boundaries"]["route"] == h["boundaries"]["control"] == "passed"
        assert run["verdict"] == sc.OPEN_TOOL_PROTOCOL

        # -- active_agent not moved to the receiver
        run = get(ids["stale"], ended("completed", 1))
        (h,) = run["handoffs"]
        assert (h["verdict"], h["failed_boundary"]) == (sc.STALE_CONTROL, "control")
        assert run["verdict"] == sc.STALE_CONTROL

        # -- a node-returned Command to a destination it never declared
        run = get(ids["undeclared"], ended("completed", 2))
        assert [(h["to_agent"], h["verdict"]) for h in run["handoffs"]] == [
            ("billing", sc.HEALTHY),
            ("refunds", sc.ROUTE_REJECTED),
        ]

        # -- interrupt(): a checkpointed wait with all five facts ...
        run = get(ids["approval"], ended("interrupted", 1))
        assert (run["verdict"], run["pending_approvals"]) == (sc.WAITING_ON_APPROVAL, 1)
        (wait,) = run["waits"]
        assert (wait["owner"], wait["reason"]) == (scenarios.OWNER, scenarios.REASON)
        assert (wait["resume_token_id"], wait["state_persisted"]) == (itr.id, True)
        assert wait["seconds_left"] > 0
        approvals = collector.api("/api/v1/approvals")
        answers.append(approvals)
        (approval,) = [a for a in approvals["approvals"] if a["run_id"] == ids["approval"]]
        assert (approval["verdict"], approval["missing"]) == (sc.WAITING_ON_APPROVAL, [])

        # ... and Command(resume=...): decided, billing re-runs, nothing counted twice
        graph.invoke(Command(resume={"decision": "approved"}), config)
        assert ins.record_outcome("refund_posted", True, config=config)
        run = get(
            ids["approval"],
            lambda r: ended("completed", 1)(r) and r["pending_approvals"] == 0 and r["outcomes"],
        )
        assert run["verdict"] == sc.HEALTHY and run["waits"] == []
        assert [h["verdict"] for h in run["handoffs"]] == [sc.HEALTHY]
        approvals = collector.api("/api/v1/approvals")
        answers.append(approvals)
        assert ids["approval"] not in {a["run_id"] for a in approvals["approvals"]}
    finally:
        ins.uninstrument()

    # -- the shipped example, run the way a user runs it
    example = subprocess.run(
        [sys.executable, str(EXAMPLE), "--endpoint", collector.http_endpoint],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert example.returncode == 0, example.stderr
    (example_run,) = re.findall(r"^run ([0-9a-f]{32}):", example.stdout, re.MULTILINE)
    run = get(example_run, lambda r: ended("completed", 1)(r) and r["outcomes"])
    assert (run["service"], run["verdict"], run["path"]) == (
        "support-langgraph",
        sc.HEALTHY,
        ["triage", "billing"],
    )

    # -- no content: not on the wire, not in any API answer, not in the database
    spans = sent.get_finished_spans()
    assert len(spans) > 40
    assert SENTINEL.encode() not in encode_spans(spans).SerializeToString()
    assert_content_free(
        collector,
        SENTINEL,
        stored="billing",
        answers={f"answer {i}": json.dumps(a) for i, a in enumerate(answers)},
    )
