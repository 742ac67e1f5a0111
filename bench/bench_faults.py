"""What a misbehaving collector costs an instrumented app (issue 7, DESIGN §6).

The shim must never block the app on the network. This bench measures, in one run, with
`configure()` defaults (OTLP/HTTP, 200 ms export delay, 64k-span queue, 5 s timeout):

1. **App-thread cost per handoff** — three recorder calls (request, transfer, accept), paced
   at `--rate` handoffs/s for `--seconds`, timed around the calls only — with the endpoint
   healthy (a real `handoffscope collector` process on a temp DuckDB file), down (a closed
   port), slow (a server that sleeps `--slow-s` before answering) and answering 503 with
   Retry-After. Reported as ratios against healthy, measured in the same round.
2. **An agent run** — the real OpenAI Agents SDK `Runner.run` with a scripted model (one
   handoff, offline), uninstrumented and instrumented under each endpoint condition:
   median run time, and the ratio against the uninstrumented run of the same round.
3. **`provider.shutdown()`** at the end of each condition (what the app's exit waits for)
   and the spans the bounded queue dropped.

The fault servers run in their own process, so their work does not share the GIL with the
app being measured. Conditions alternate within each round so machine noise hits all.

    .venv/bin/python bench/bench_faults.py [--rounds 3] [--rate 2000] [--seconds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from launch import start_collector  # bench/ is on sys.path: these scripts run as files

from handoffscope.instrumentation import HandoffRecorder, configure, stats

# The handoff the shim-fault tests drive (tests/support/shim.py), so bench and tests load
# the shim the same way.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.shim import record_handoff  # noqa: E402

CONDITIONS = ("healthy", "down", "slow", "503")


# --- the endpoints -------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_fault(port: int, mode: str, delay_s: float) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if mode == "slow":
                time.sleep(delay_s)
            try:
                self.send_response(503 if mode == "503" else 200)
                if mode == "503":
                    self.send_header("Retry-After", "1")
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()
            except OSError:
                pass  # the exporter timed out and left

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.serve_forever()


def _start_fault(mode: str, delay_s: float) -> tuple[str, multiprocessing.Process]:
    port = _free_port()
    proc = multiprocessing.Process(target=_serve_fault, args=(port, mode, delay_s), daemon=True)
    proc.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    return f"http://127.0.0.1:{port}", proc


# --- the app -------------------------------------------------------------------------------


def recorder_cost(recorder: HandoffRecorder, rate: int, seconds: float, tag: str) -> float:
    """Seconds spent in the app thread per handoff (three evidence spans), paced at `rate`."""
    total = int(rate * seconds)
    spent = 0.0
    t0 = time.perf_counter()
    for i in range(total):
        c0 = time.perf_counter()
        record_handoff(recorder, f"{tag}-{i // 10}", i)
        spent += time.perf_counter() - c0
        ahead = (i + 1) / rate - (time.perf_counter() - t0)
        if ahead > 0.001:
            time.sleep(ahead)
    return spent / total


def agent_runs(runs: int) -> float:
    """Median seconds per real Agents SDK run (scripted model, one handoff, offline)."""
    import agents
    from agents.testing import ScriptedModel, assistant_message, function_call

    async def one() -> float:
        model = ScriptedModel(
            [
                [function_call("transfer_to_billing", {}, call_id="call_h1")],
                [assistant_message("refunded")],
            ]
        )
        billing = agents.Agent(name="billing", instructions="refund", model=model)
        triage = agents.Agent(name="triage", instructions="route", model=model, handoffs=[billing])
        t0 = time.perf_counter()
        await agents.Runner.run(triage, "refund my order")
        return time.perf_counter() - t0

    async def all_runs() -> list[float]:
        return [await one() for _ in range(runs)]

    return statistics.median(asyncio.run(all_runs()))


def measure(endpoint: str | None, args: argparse.Namespace, tag: str) -> dict[str, float]:
    """One condition: agent run time, recorder cost, shutdown time, drops."""
    from agents.tracing import set_trace_processors

    from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    if endpoint is None:  # the app without the shim at all
        set_trace_processors([])
        return {"run_s": agent_runs(args.runs)}
    stats.reset()
    provider = configure(service_name="bench-faults", endpoint=endpoint, set_global=False)
    # Agent runs first: the recorder burst below leaves the collector (on these same two
    # cores) busy committing for a while, which would tax the runs, not the shim.
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider, replace_processors=True)
    try:
        run_s = agent_runs(args.runs)
    finally:
        instrumentor.uninstrument()
    cost = recorder_cost(HandoffRecorder(provider), args.rate, args.seconds, tag)
    t0 = time.perf_counter()
    provider.shutdown()
    shutdown_s = time.perf_counter() - t0
    return {
        "handoff_s": cost,
        "run_s": run_s,
        "shutdown_s": shutdown_s,
        "dropped": float(stats.snapshot()["spans_dropped"]),  # type: ignore[arg-type]
    }


def wait_idle(url: str) -> None:
    """Until the collector has stored what it was sent (spans_stored steady for 1 s)."""
    import httpx

    last, steady_since = -1, time.monotonic()
    while time.monotonic() - steady_since < 1.0:
        stored = httpx.get(url + "/healthz", timeout=30).json()["spans_stored"]
        if stored != last:
            last, steady_since = stored, time.monotonic()
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rate", type=int, default=2000, help="handoffs per second in part 1")
    p.add_argument("--seconds", type=float, default=2.0, help="length of part 1 per condition")
    p.add_argument("--runs", type=int, default=50, help="agent runs per condition")
    p.add_argument("--slow-s", type=float, default=2.0, help="the slow server's delay")
    args = p.parse_args(argv)
    # The exporters log every failed batch; under these faults that is the point.
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)

    with tempfile.TemporaryDirectory() as tmp:
        collector, healthy_url = start_collector(Path(tmp) / "bench.duckdb")
        slow_url, slow = _start_fault("slow", args.slow_s)
        unavailable_url, unavailable = _start_fault("503", 0.0)
        endpoints: dict[str, Callable[[], str | None]] = {
            "no shim": lambda: None,
            "healthy": lambda: healthy_url,
            "down": lambda: f"http://127.0.0.1:{_free_port()}",
            "slow": lambda: slow_url,
            "503": lambda: unavailable_url,
        }
        results: dict[str, list[dict[str, float]]] = {name: [] for name in endpoints}
        try:
            agent_runs(5)  # warm imports and the SDK
            for r in range(args.rounds):
                for name, endpoint in endpoints.items():
                    results[name].append(measure(endpoint(), args, f"r{r}-{name}"))
                    wait_idle(healthy_url)
        finally:
            collector.terminate()
            collector.wait(60)
            slow.terminate()
            unavailable.terminate()

    def med(name: str, key: str) -> float:
        return statistics.median(x[key] for x in results[name])

    def ratio(name: str, key: str, base: str) -> float:
        # per round, then the median: both sides of each ratio come from the same round
        return statistics.median(
            a[key] / b[key] for a, b in zip(results[name], results[base], strict=True)
        )

    print(
        f"== app-thread cost per handoff (3 evidence spans), {args.rate}/s for "
        f"{args.seconds:g} s, configure() defaults; median of {args.rounds} rounds"
    )
    for name in CONDITIONS:
        print(
            f"{name:>8}: {med(name, 'handoff_s') * 1e6:8.1f} µs   "
            f"x{ratio(name, 'handoff_s', 'healthy'):5.2f} vs healthy"
        )
    print(f"== real Agents SDK run (scripted model, one handoff), median of {args.runs} runs")
    print(f"{'no shim':>8}: {med('no shim', 'run_s') * 1e3:8.2f} ms   (baseline)")
    for name in CONDITIONS:
        print(
            f"{name:>8}: {med(name, 'run_s') * 1e3:8.2f} ms   "
            f"x{ratio(name, 'run_s', 'no shim'):5.2f} vs no shim   "
            f"x{ratio(name, 'run_s', 'healthy'):5.2f} vs healthy"
        )
    print("== provider.shutdown() at exit, and spans the bounded queue dropped")
    for name in CONDITIONS:
        print(
            f"{name:>8}: shutdown {med(name, 'shutdown_s'):6.2f} s (max "
            f"{max(x['shutdown_s'] for x in results[name]):6.2f} s)   "
            f"dropped {med(name, 'dropped'):.0f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
