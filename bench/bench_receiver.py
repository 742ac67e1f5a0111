"""Collector receiver capacity: spans/s acknowledged once durable (DESIGN §6).

Load: pre-encoded OTLP/HTTP protobuf exports of 512 spans each (made once with the real
OTel SDK), posted from a SEPARATE process over 4 keep-alive connections as fast as they
are answered. Every export is made unique before it is sent — span ids from a counter,
run ids renamed, start/end times moved to "now" — by patching the encoded bytes in place,
so the collector really stores every span (a re-sent span would be skipped as a
duplicate) and sees time moving forward as in production.

Baseline, measured in the same run: a null receiver on the same HTTP stack (uvicorn +
Starlette, same event loop and parser) that parses each body with opentelemetry-proto
and answers 200 — no allowlist, no health engine, no storage. Measured against it: the
collector as it runs by default (exports answered once fsynced to the ingest log and
loaded into DuckDB behind the answer; the judge deriving verdicts behind that, its engine
in a worker process, at a CPU priority 10 below the collector's), the same with
`--judge-nice 0` (the judge at the collector's priority, the former default), the same
with `--ingest-log off` (answered after each DuckDB group
commit, the former default; with and without the judge), the same with `--judge thread` (the engine in the
collector's own process, the former default), with `--judge-workers 2` (the engine in two
worker processes, each judging its shard of the runs), and with `--judge off` (ingest alone: decode,
allowlist, Arrow build, insert, commit — what the acknowledgement costs when nothing
else competes for the GIL). Printed: each figure, its ratio to the null receiver, and
the target (≥ 60k spans/s, judge on).
Timings are never asserted; this machine is shared and noisy, compare within one run.

    .venv/bin/python bench/bench_receiver.py [--seconds 10] [--warmup 2] [--connections 4]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import launch  # bench/ is on sys.path: these scripts run as files
from launch import start_collector

TARGET_SPANS_PER_S = 60_000
SPANS_PER_EXPORT = 512
SPANS_PER_RUN = 4
PB = "application/x-protobuf"


# --- the payload ------------------------------------------------------------------------


def make_template() -> tuple[bytes, dict]:
    """One 512-span export from the real SDK, and where its ids and times sit in the bytes."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from handoffscope.instrumentation import semconv as sc

    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "bench-app"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(sc.INSTRUMENTATION_SCOPE)
    run_ids = []
    for _ in range(SPANS_PER_EXPORT // SPANS_PER_RUN):
        run = "r" + secrets.token_hex(8)[:15]  # 16 chars; replaced per export
        run_ids.append(run)
        common = {sc.RUN_ID: run, sc.HANDOFF_ID: "h1"}
        tracer.start_span(
            sc.SPAN_REQUEST,
            attributes={
                **common,
                sc.FROM_AGENT: "triage",
                sc.TO_AGENT: "billing",
                sc.TURN: 1,
                sc.FINGERPRINT: "9f86d081884c7d65",
                sc.STATE_VERSION: 1,
                sc.HISTORY_ITEMS_FORWARDED: 4,
                sc.HISTORY_ITEMS_TOTAL: 9,
                sc.ROUTE_DECLARED: True,
                sc.TOOL_CALL_ID: "call_bench",
                sc.CONTEXT_REQUIRED_KEYS: ["account_id", "invoice_id"],
                sc.GEN_AI_AGENT_NAME: "triage",
            },
        ).end()
        tracer.start_span(
            sc.SPAN_ACCEPT,
            attributes={
                **common,
                sc.ROUTE_GOTO: "billing",
                sc.CONTROL_BEFORE: "triage",
                sc.CONTROL_AFTER: "billing",
                sc.TOOL_CALL_CLOSED: True,
                sc.DESTINATION_STARTED: True,
                sc.CONTEXT_MISSING_KEYS: [],
            },
        ).end()
        tracer.start_span(
            sc.SPAN_OUTCOME,
            attributes={**common, sc.OUTCOME_VERIFIER: "refund_check", sc.OUTCOME_RESULT: "pass"},
        ).end()
        tracer.start_span(
            sc.SPAN_RUN,
            attributes={
                sc.RUN_ID: run,
                sc.RUN_STATUS: "completed",
                sc.RUN_FINAL_AGENT: "billing",
                sc.RUN_TURNS: 2,
            },
        ).end()
    spans = memory.get_finished_spans()
    body = encode_spans(spans).SerializeToString()

    def where(needle: bytes) -> list[int]:
        found, at = [], body.find(needle)
        while at >= 0:
            found.append(at)
            at = body.find(needle, at + 1)
        return found

    span_ids, times = [], []
    base = min(s.start_time for s in spans)
    for s in spans:
        (offset,) = where(b"\x12\x08" + s.context.span_id.to_bytes(8, "big"))  # field 2, len 8
        span_ids.append(offset + 2)
        for tag, value in ((b"\x39", s.start_time), (b"\x41", s.end_time)):  # fields 7, 8 fixed64
            (offset,) = where(tag + struct.pack("<Q", value))
            times.append((offset + 1, value - base))
    runs = [where(run.encode()) for run in run_ids]
    assert all(len(r) == SPANS_PER_RUN for r in runs)
    return body, {"span_ids": span_ids, "times": times, "runs": runs}


# --- the load generator (a separate process) ---------------------------------------------


def client_main(args: argparse.Namespace) -> None:
    template = Path(args.payload).read_bytes()
    layout = json.loads(Path(args.payload + ".json").read_text())
    # HOST:PORT, or several comma-separated: connection i goes to target i mod n
    # (bench_scale_out.py splits the same load across collectors on one store).
    targets = [t.split(":") for t in args.target.split(",")]
    stop_at = time.monotonic() + args.warmup + args.seconds
    measure_from = time.monotonic() + args.warmup
    results = [[0, 0, {}] for _ in range(args.connections)]  # acked spans, requests, codes

    def worker(index: int) -> None:
        body = bytearray(template)
        counter = (index + 1) << 40
        host, port = targets[index % len(targets)]
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        acked, requests, codes = 0, 0, {}
        while (now := time.monotonic()) < stop_at:
            for offset in layout["span_ids"]:
                counter += 1
                body[offset : offset + 8] = counter.to_bytes(8, "big")
            for offsets in layout["runs"]:
                counter += 1
                run = b"r%015x" % counter
                for offset in offsets:
                    body[offset : offset + 16] = run
            base = time.time_ns()
            for offset, delta in layout["times"]:
                body[offset : offset + 8] = struct.pack("<Q", base + delta)
            conn.request("POST", "/v1/traces", body=bytes(body), headers={"Content-Type": PB})
            response = conn.getresponse()
            response.read()
            codes[response.status] = codes.get(response.status, 0) + 1
            if response.status == 200 and now >= measure_from:
                acked += SPANS_PER_EXPORT
                requests += 1
            elif response.status in (429, 503):
                time.sleep(float(response.getheader("Retry-After", "1")))
        conn.close()
        results[index] = [acked, requests, codes]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes: dict[str, int] = {}
    for _, _, c in results:
        for k, v in c.items():
            codes[str(k)] = codes.get(str(k), 0) + v
    print(
        json.dumps(
            {
                "acked_spans": sum(r[0] for r in results),
                "requests": sum(r[1] for r in results),
                "seconds": args.seconds,
                "codes": codes,
            }
        ),
        flush=True,
    )


# --- the null receiver (a separate process, same HTTP stack) -----------------------------


def null_server_main() -> None:
    import socket

    import uvicorn
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
        ExportTraceServiceResponse,
    )
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    answer = ExportTraceServiceResponse().SerializeToString()

    async def traces(request: Request) -> Response:
        ExportTraceServiceRequest.FromString(await request.body())  # decodes, stores nothing
        return Response(answer, media_type=PB)

    app = Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(
        uvicorn.Config(
            app, lifespan="off", log_level="warning", access_log=False, server_header=False
        )
    )
    original = server.startup

    async def startup(sockets=None):
        await original(sockets=sockets)
        print(f"null receiver ready: http=http://127.0.0.1:{sock.getsockname()[1]}", flush=True)

    server.startup = startup
    server.run(sockets=[sock])


# --- the run ------------------------------------------------------------------------------


def start(cmd: list[str]) -> tuple[subprocess.Popen, str]:
    """launch.start, answering HOST:PORT (what http.client wants)."""
    proc, url = launch.start(cmd)
    return proc, url.removeprefix("http://")


def load(target: str, payload: str, args: argparse.Namespace) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--client",
            "--target",
            target,
            "--payload",
            payload,
            "--seconds",
            str(args.seconds),
            "--warmup",
            str(args.warmup),
            "--connections",
            str(args.connections),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="measured seconds per receiver")
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds first")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--null-server", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--target", help=argparse.SUPPRESS)
    parser.add_argument("--payload", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        return client_main(args)
    if args.null_server:
        return null_server_main()

    with tempfile.TemporaryDirectory(prefix="bench-receiver-") as tmp:
        body, layout = make_template()
        payload = os.path.join(tmp, "payload.pb")
        Path(payload).write_bytes(body)
        Path(payload + ".json").write_text(json.dumps(layout))
        print(
            f"receiver capacity: {SPANS_PER_EXPORT}-span OTLP/HTTP protobuf exports "
            f"({len(body) // 1024} KiB), {args.connections} keep-alive connections from a "
            f"separate process, {args.seconds:g} s measured after {args.warmup:g} s warm-up",
            flush=True,
        )

        null, target = start([sys.executable, __file__, "--null-server"])
        try:
            baseline = load(target, payload, args)
        finally:
            null.terminate()
            null.wait(30)

        measured = measure_collector(os.path.join(tmp, "bench.duckdb"), payload, args)
        level = measure_collector(
            os.path.join(tmp, "level.duckdb"), payload, args, "--judge-nice", "0"
        )
        thread = measure_collector(
            os.path.join(tmp, "thread.duckdb"), payload, args, "--judge", "thread"
        )
        workers = measure_collector(
            os.path.join(tmp, "workers.duckdb"), payload, args, "--judge-workers", "2"
        )
        ingest = measure_collector(
            os.path.join(tmp, "ingest.duckdb"), payload, args, "--judge", "off"
        )
        commit = measure_collector(
            os.path.join(tmp, "commit.duckdb"), payload, args, "--ingest-log", "off"
        )
        ingest_commit = measure_collector(
            os.path.join(tmp, "ingest-commit.duckdb"),
            payload,
            args,
            "--judge",
            "off",
            "--ingest-log",
            "off",
        )

    null_rate = baseline["acked_spans"] / args.seconds
    rate = measured["acked_spans"] / args.seconds
    level_rate = level["acked_spans"] / args.seconds
    ingest_rate = ingest["acked_spans"] / args.seconds
    thread_rate = thread["acked_spans"] / args.seconds
    workers_rate = workers["acked_spans"] / args.seconds
    commit_rate = commit["acked_spans"] / args.seconds
    ingest_commit_rate = ingest_commit["acked_spans"] / args.seconds
    verdict = "MET" if rate >= TARGET_SPANS_PER_S else "NOT MET"
    print(f"  null receiver (same HTTP stack, parse only, no storage): {null_rate:>9,.0f} spans/s")
    print(
        f"  handoffscope collector (ack after fsync, ingest log):  {rate:>9,.0f} spans/s"
        f"   = {rate / null_rate:.2f}x the null receiver"
    )
    print(
        f"  same, --judge-nice 0 (the judge at the collector's CPU priority):{level_rate:>6,.0f}"
        f" spans/s = {level_rate / null_rate:.2f}x the null receiver; the judge 10 lower"
        f" (the default) {rate / level_rate:.2f}x it"
    )
    print(
        f"  same, --judge thread (engine in the collector process):{thread_rate:>9,.0f} spans/s"
        f"   = {thread_rate / null_rate:.2f}x the null receiver; judge worker process"
        f" {rate / thread_rate:.2f}x it"
    )
    print(
        f"  same, --judge-workers 2 (engine in two worker processes):{workers_rate:>7,.0f} spans/s"
        f"   = {workers_rate / null_rate:.2f}x the null receiver; one worker"
        f" {rate / workers_rate:.2f}x it"
    )
    print(
        f"  same, --judge off (ingest alone, no verdicts derived):  {ingest_rate:>9,.0f} spans/s"
        f"   = {ingest_rate / null_rate:.2f}x the null receiver"
    )
    print(
        f"  same, --ingest-log off (answered after each DuckDB commit):{commit_rate:>7,.0f} spans/s"
        f"   = {commit_rate / null_rate:.2f}x the null receiver; the ingest log"
        f" {rate / commit_rate:.2f}x it"
    )
    print(
        f"  same, --judge off --ingest-log off:                     {ingest_commit_rate:>9,.0f} spans/s"
        f"   = {ingest_commit_rate / null_rate:.2f}x the null receiver; the ingest log"
        f" {ingest_rate / ingest_commit_rate:.2f}x it"
    )
    print(f"  target >= {TARGET_SPANS_PER_S:,} spans/s (judge on): {verdict}")
    print(
        f"  answers: collector {measured['codes']}, --judge off {ingest['codes']}, "
        f"null {baseline['codes']}; {measured['stored']:,} and {ingest['stored']:,} spans "
        f"stored in total (warm-up included)"
    )


def measure_collector(db: str, payload: str, args: argparse.Namespace, *extra: str) -> dict:
    """The load against a real collector on its own file; adds `stored` (from /healthz)."""
    collector, target = start_collector(db, *extra)
    target = target.removeprefix("http://")
    try:
        measured = load(target, payload, args)
        conn = http.client.HTTPConnection(*target.split(":"))
        for _ in range(600):  # spans answered from the ingest log reach the file a load later
            conn.request("GET", "/healthz")
            health = json.loads(conn.getresponse().read())
            if not health.get("ingest_pending_spans"):
                break
            time.sleep(0.1)
        measured["stored"] = health["spans_stored"]
    finally:
        collector.terminate()
        collector.wait(120)
    return measured


if __name__ == "__main__":
    main()
