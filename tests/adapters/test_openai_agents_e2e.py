"""OpenAI Agents SDK adapter, end to end: real Runner -> real OTLP/HTTP exporter -> real
collector subprocess -> DuckDB file -> query API.

One collector per sensitivity setting; every scenario of openai_agents_scenarios.py runs
into it, then the verdicts are read back through `GET /api/v1/runs/{run_id}` and
`GET /api/v1/approvals`, and the planted sentinel is searched for in the OTLP bytes, every
API answer, the DuckDB file's bytes and a full dump of its tables.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import openai_agents_scenarios as scn
import pytest
from agents import set_trace_processors
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.privacy import assert_content_free

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor


def by_to(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {h["to_agent"]: h for h in run["handoffs"]}


@pytest.mark.parametrize(
    "sensitive", [True, False], ids=["sensitive-data-on", "sensitive-data-off"]
)
def test_verdicts_through_the_collector_and_no_content_anywhere(
    collector: Any, otlp_provider: TracerProvider, fetch_run: Any, sensitive: bool
) -> None:
    # The same spans the OTLP exporter serialises, kept to check the bytes on the wire.
    sent = InMemorySpanExporter()
    otlp_provider.add_span_processor(SimpleSpanProcessor(sent))
    set_trace_processors([])
    inst = OpenAIAgentsInstrumentor()
    inst.instrument(tracer_provider=otlp_provider, replace_processors=True)
    answers: list[str] = []

    def get(run_id: str, until: Any = lambda run: True) -> dict[str, Any]:
        run = fetch_run(run_id, until)
        answers.append(json.dumps(run))
        return run

    try:

        async def first_round() -> dict[str, Any]:
            past = datetime.now(UTC) - timedelta(minutes=5)
            return {
                "healthy": await scn.healthy(inst, sensitive),
                "unverified": await scn.healthy(inst, sensitive, verify=False),
                "ping_pong": await scn.ping_pong(inst, sensitive),
                "progress": await scn.retries_with_progress(inst, sensitive),
                "multiple": await scn.multiple_handoffs(inst, sensitive),
                "undeclared": await scn.undeclared_destination(inst, sensitive),
                "approval": await scn.approval_pause(inst, sensitive),
                "overdue": await scn.approval_pause(inst, sensitive, deadline=past),
                "unrecorded": await scn.approval_pause(inst, sensitive, checkpoint=False),
            }

        ids = asyncio.run(first_round())
        otlp_provider.force_flush()

        run = get(ids["healthy"], lambda r: r["status"] == "completed" and r["outcomes"])
        assert (run["verdict"], run["loop"], run["false_complete"]) == (sc.HEALTHY, False, False)
        (h,) = run["handoffs"]
        assert (h["from_agent"], h["to_agent"], h["verdict"]) == ("triage", "billing", sc.HEALTHY)
        assert (h["history_items_forwarded"], h["history_items_total"]) == (1, 3)
        assert h["route_declared"] is True
        assert run["outcomes"][0]["result"] == sc.OUTCOME_PASS

        run = get(ids["unverified"], lambda r: r["status"] == "completed")
        assert run["verdict"] == sc.FALSE_COMPLETE and run["false_complete"] is True

        run = get(ids["ping_pong"], lambda r: r["status"] == "max_turns")
        assert (run["verdict"], run["loop"]) == (sc.LOOP, True)
        assert run["loop_cycle"] == ["agent_a", "agent_b", "agent_a"]
        assert sc.LOOP in {h["verdict"] for h in run["handoffs"]}

        run = get(ids["progress"], lambda r: r["status"] == "completed" and r["outcomes"])
        assert (run["verdict"], run["loop"]) == (sc.HEALTHY, False)
        assert {h["verdict"] for h in run["handoffs"]} == {sc.HEALTHY}

        run = get(ids["multiple"], lambda r: r["status"] == "completed" and len(r["handoffs"]) == 2)
        assert run["verdict"] == sc.ROUTE_REJECTED
        handoffs = by_to(run)
        assert handoffs["refunds"]["verdict"] == sc.ROUTE_REJECTED
        assert handoffs["refunds"]["failed_boundary"] == sc.BOUNDARY_ROUTE
        assert handoffs["billing"]["verdict"] == sc.HEALTHY

        run = get(ids["undeclared"], lambda r: r["status"] == "completed")
        assert run["verdict"] == sc.ROUTE_REJECTED
        assert by_to(run)["fraud"]["route_declared"] is False

        paused = get(ids["approval"].trace_id, lambda r: r["status"] == "interrupted")
        assert (paused["verdict"], paused["pending_approvals"]) == (sc.WAITING_ON_APPROVAL, 1)
        run = get(ids["overdue"].trace_id, lambda r: r["status"] == "interrupted")
        assert run["verdict"] == sc.APPROVAL_OVERDUE
        run = get(ids["unrecorded"].trace_id, lambda r: r["status"] == "interrupted")
        assert run["verdict"] == sc.WAIT_UNCERTAIN

        approvals = collector.api("/api/v1/approvals")
        answers.append(json.dumps(approvals))
        waiting = {a["run_id"]: a for a in approvals["approvals"]}
        pending = waiting[ids["approval"].trace_id]
        assert (pending["owner"], pending["reason"], pending["verdict"]) == (
            "billing-team",
            "refund_approval",
            sc.WAITING_ON_APPROVAL,
        )
        assert pending["resume_token_id"] == "call_refund_1" and pending["state_persisted"] is True
        assert waiting[ids["unrecorded"].trace_id]["verdict"] == sc.WAIT_UNCERTAIN

        # The human approves; the app resumes the stored state.
        asyncio.run(scn.approval_resume(inst, ids["approval"], sensitive))
        otlp_provider.force_flush()
        run = get(ids["approval"].trace_id, lambda r: r["status"] == "completed")
        assert (run["verdict"], run["pending_approvals"]) == (sc.HEALTHY, 0)
        assert [h["to_agent"] for h in run["handoffs"]] == ["billing"]
    finally:
        inst.uninstrument()
        set_trace_processors([])

    sentinel = scn.SENTINEL
    assert sentinel.encode() not in encode_spans(sent.get_finished_spans()).SerializeToString()
    assert_content_free(
        collector,
        sentinel,
        stored="agent_a",
        answers={f"answer {i}": a for i, a in enumerate(answers)},
    )


def test_the_example_app_runs_offline_into_the_collector(collector: Any, fetch_run: Any) -> None:
    example = Path(__file__).parents[2] / "examples" / "openai_agents_app.py"
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": collector.http_endpoint}
    env.pop("OPENAI_API_KEY", None)  # offline: it must not need one
    done = subprocess.run(
        [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    run_id = re.search(r"run (\S+): paused", done.stdout).group(1)  # type: ignore[union-attr]
    # The app flushed everything before it exited; wait for the judge to reach it, so the
    # wait's decision is judged too, not only the run's status and outcomes (raw spans).
    collector.judged()
    run = fetch_run(run_id, lambda r: r["status"] == "completed" and r["outcomes"])
    assert (run["verdict"], run["path"], run["pending_approvals"]) == (
        sc.HEALTHY,
        ["triage", "billing"],
        0,
    )
    assert run["handoffs"][0]["history_items_forwarded"] is not None
