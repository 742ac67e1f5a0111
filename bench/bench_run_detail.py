"""Run detail render time: a 10,000-handoff run vs a 100-handoff run (issue 13, item 6).

The finding: the page added one plotly annotation per handoff and listed every handoff —
300 handoffs took 34.5 s to render, 600+ never finished. Now it lists one page of 200,
draws the path from the collector's folded summary and the timeline in a fixed number of
traces. This bench renders the real Streamlit page (AppTest, the script run end to end:
API calls, frames, figures) for both runs of a real collector and reports the median
seconds and the ratio big / small (the target: "a few seconds" for 10k; ≈ the ratio of
one page of 200 to 100 rows, not of 10,000 to 100).

    .venv/bin/python bench/bench_run_detail.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import streamlit as st
from launch import start_collector  # bench/ is on sys.path: these scripts run as files
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from streamlit.testing.v1 import AppTest

from handoffscope.dashboard.config import ENV_API
from handoffscope.instrumentation import semconv as sc

APP = Path(__file__).resolve().parents[1] / "dashboard/src/handoffscope/dashboard/app.py"
RUNS = {"small": ("bench-run-100", 100), "big": ("bench-run-10k", 10_000)}


def _export(run_id: str, n: int) -> bytes:
    memory = InMemorySpanExporter()
    tp = TracerProvider(resource=Resource.create({sc.SERVICE_NAME: "bench-app"}))
    tp.add_span_processor(SimpleSpanProcessor(memory))
    tracer = tp.get_tracer(sc.INSTRUMENTATION_SCOPE)
    t0 = time.time_ns() - 60 * 10**9
    for i in range(n):
        at = t0 + i * 1_000_000
        tracer.start_span(
            sc.SPAN_REQUEST,
            start_time=at,
            attributes={
                sc.RUN_ID: run_id,
                sc.HANDOFF_ID: f"h{i + 1:05d}",
                sc.FROM_AGENT: "triage" if i % 2 == 0 else "billing",
                sc.TO_AGENT: "billing" if i % 2 == 0 else "triage",
                sc.TURN: i + 1,
                sc.STATE_VERSION: i + 1,
                sc.ROUTE_DECLARED: True,
                # Every third handoff refused: unhealthy rows and notes on every page.
                **(
                    {sc.DESTINATION_STARTED: False, sc.REJECTION_REASON: "stale"}
                    if i % 3 == 2
                    else {sc.DESTINATION_STARTED: True}
                ),
            },
        ).end(end_time=at + 1000)
    tp.shutdown()
    return encode_spans(memory.get_finished_spans()).SerializeToString()


def _seed(api: str) -> None:
    for run_id, n in RUNS.values():
        r = httpx.post(
            api + "/v1/traces",
            content=_export(run_id, n),
            headers={"Content-Type": "application/x-protobuf"},
            timeout=120,
        )
        r.raise_for_status()
    deadline = time.monotonic() + 300
    while httpx.get(api + "/healthz", timeout=30).json().get("judge_pending_commits"):
        if time.monotonic() > deadline:
            raise RuntimeError("the judge did not catch up")
        time.sleep(0.2)


def render(run_id: str) -> float:
    """Seconds to run the Run detail page script for `run_id` (fresh app, fresh cache)."""
    st.cache_data.clear()  # the client's frame cache is per process, not per AppTest
    at = AppTest.from_file(str(APP), default_timeout=600)
    at.run()
    at.switch_page("views/run_detail.py")
    at.query_params["run_id"] = run_id
    t0 = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - t0
    if at.exception:
        raise RuntimeError([e.value for e in at.exception])
    return elapsed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        proc, api = start_collector(Path(d) / "detail.duckdb")
        try:
            _seed(api)
            os.environ[ENV_API] = api
            render(RUNS["small"][0])  # warm-up: imports, first figure
            times: dict[str, list[float]] = {k: [] for k in RUNS}
            for r in range(args.rounds):
                for name in RUNS if r % 2 == 0 else reversed(list(RUNS)):
                    s = render(RUNS[name][0])
                    times[name].append(s)
                    print(f"  round {r + 1} {name:>5} ({RUNS[name][1]:>6} handoffs): {s:6.2f} s")
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    small = statistics.median(times["small"])
    big = statistics.median(times["big"])
    print(f"\nrun detail render, median: 100 handoffs {small:.2f} s, 10,000 handoffs {big:.2f} s")
    print(f"ratio 10k / 100: {big / small:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
