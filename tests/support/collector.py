"""The REAL collector as a subprocess, and real OTel SDK senders into it.

`CollectorProcess` starts `python -m handoffscope.collector` on free ports with a DuckDB
file in a directory of its own, waits for its startup line and /healthz, and offers:
`.http_endpoint` ('http://127.0.0.1:PORT'), `.grpc_endpoint` ('127.0.0.1:PORT'),
`.db_path`, `.store` (the DuckDB file, or the `postgresql://` DSN of its database under
`pytest --store postgresql`: support/stores.py), `.query(sql)` -> rows of that store (a
DuckDB file only once stopped), `.api(path, **params)` -> JSON, `.get(path)` / `.post_traces(...)` ->
httpx.Response, `.healthz()`, `.metric(name, **labels)`, `.run(run_id, until=...)`,
`.stop()` (SIGTERM, wait, return code), `.kill()` (SIGKILL), `.restart(env=..., args=...)`
(same ports, same store). `Collectors` starts them and closes every one still running: the
root conftest's `collector_factory` (per test) and `module_collector_factory` (per module)
are two scopes of it.

`otlp_exporter(collector, protocol)` is the real OTLP exporter pointed at a collector;
`OTLPSender` records spans with a real tracer and sends exactly the ones recorded, in ONE
export, returning its `SpanExportResult`.

The collector picks its own ports (`--http-port 0 --grpc-port 0`) and reports them on its
startup line, so parallel test processes on this shared machine never race for a port.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from support.polling import eventually
from support.stores import Stores, is_dsn
from support.stores import query as query_store

READY = re.compile(r"handoffscope collector ready: http=(?P<http>\S+) grpc=(?P<grpc>\S+)")
STARTUP_TIMEOUT_S = 180.0
"""A bound, not a measurement: a collector starts in ~2 s idle, but past 60 s was seen with
the machine's two cores shared by a dozen test processes."""
STOP_TIMEOUT_S = 60.0


def judged(http_endpoint: str, timeout: float = 60.0) -> None:
    """Wait until the collector at `http_endpoint` has judged every span it acknowledged
    (verdicts trail the ack: judge.py; `/healthz` says how many commits wait).

    Not a timing assertion: the query API and the dashboard show what is judged, so a test
    that reads verdicts right after an export waits here first; if the judge never
    catches up, the test's own assertions say what is missing.
    """

    def pending() -> int | None:
        try:
            health = httpx.get(http_endpoint + "/healthz", timeout=30).json()
        except (httpx.HTTPError, ValueError):
            return None  # not up (or a test of a broken collector): nothing to wait for
        # Spans answered from the ingest log reach the store (and then the judge) a load
        # later: both must be behind us.
        return (health.get("judge_pending_commits") or 0) + (
            health.get("ingest_pending_spans") or 0
        )

    eventually(pending, lambda n: not n, timeout=timeout, every=0.02, or_last=True)


class CollectorProcess:
    """One real collector process and the store it writes (a DuckDB file it owns, or a
    PostgreSQL database of its own)."""

    def __init__(
        self,
        workdir: Path,
        *,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        db_name: str = "h.duckdb",
        store: str | None = None,
    ) -> None:
        self.workdir = workdir
        self.db_path = workdir / db_name
        self.store = store or str(self.db_path)
        self.env = dict(env or {})
        self.args = list(args)
        self.proc: subprocess.Popen[str] | None = None
        self.output: list[str] = []
        self.http_port = 0
        self.grpc_port = 0
        self.http_endpoint = ""
        self.grpc_endpoint = ""
        self._ready = threading.Event()

    # lifecycle ---------------------------------------------------------------------------

    @property
    def token(self) -> str:
        return self.env.get("HANDOFFSCOPE_TOKEN", "")

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "handoffscope.collector",
            *(("--store", self.store) if is_dsn(self.store) else ("--db", self.store)),
            "--http-port",
            str(self.http_port),
            "--grpc-port",
            str(self.grpc_port),
            *self.args,
        ]

    def start(self) -> CollectorProcess:
        assert self.proc is None or self.proc.poll() is not None, "already running"
        # Only the settings this test asked for: a HANDOFFSCOPE_TOKEN (or port) in the
        # developer's shell must not change what the collector under test does.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("HANDOFFSCOPE_")}
        env = {**inherited, **self.env}
        env.setdefault("PYTHONUNBUFFERED", "1")
        self.output = []
        self._ready.clear()
        self.proc = subprocess.Popen(
            self.command(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=self.workdir,
        )
        threading.Thread(target=self._pump, args=(self.proc,), daemon=True).start()
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not self._ready.wait(0.05):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"collector did not start:\n{self.log()}")
        self.healthz()  # serving, not only listening
        return self

    def _pump(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.output.append(line.rstrip("\n"))
            match = READY.search(line)
            if match:
                self.http_endpoint = match["http"]
                self.grpc_endpoint = match["grpc"]
                self.http_port = int(self.http_endpoint.rsplit(":", 1)[1])
                self.grpc_port = int(self.grpc_endpoint.rsplit(":", 1)[1])
                self._ready.set()

    def log(self) -> str:
        return "\n".join(self.output)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Ask the collector to shut down (SIGTERM by default); return its exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()
                raise RuntimeError(f"collector ignored {sig!r}:\n{self.log()}") from None
        return self.proc.returncode

    def close(self) -> None:
        """Teardown: stop if running, kill if it will not stop."""
        if self.running:
            try:
                self.stop()
            except RuntimeError:
                self.kill()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(
        self, *, env: Mapping[str, str] | None = None, args: Sequence[str] | None = None
    ) -> CollectorProcess:
        """Stop (if running) and start again on the same ports and store."""
        if self.running:
            rc = self.stop()
            assert rc == 0, self.log()
        if env is not None:
            self.env = dict(env)
        if args is not None:
            self.args = list(args)
        return self.start()

    def query(self, sql: str, params: object = None) -> list[tuple]:
        """Rows of a read-only query against this collector's store (a DuckDB file is
        locked by its collector: stop it first)."""
        return query_store(self.store, sql, params)

    # HTTP --------------------------------------------------------------------------------

    def headers(self, token: str | None = None) -> dict[str, str]:
        token = self.token if token is None else token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def get(self, path: str, *, token: str | None = None, **params: Any) -> httpx.Response:
        if path.startswith("/api/"):
            self.judged()
        return httpx.get(
            self.http_endpoint + path, params=params, headers=self.headers(token), timeout=30
        )

    def judged(self, timeout: float = 60.0) -> None:
        """Wait until every acknowledged span is judged (verdicts trail the ack: judge.py)."""
        judged(self.http_endpoint, timeout)

    def run(
        self,
        run_id: str,
        until: Callable[[dict[str, Any]], bool] = lambda run: True,
        timeout: float = 60.0,
    ) -> dict[str, Any]:
        """GET /api/v1/runs/{run_id} until `until(run)` holds (export and judging are
        asynchronous; a 404 until the first span is stored). Not a timing assertion: after
        `timeout` the last answer is returned and the test's own assertions say what is
        missing."""
        return eventually(
            lambda: self.api(f"/api/v1/runs/{run_id}"),
            lambda run: "handoffs" in run and until(run),
            timeout=timeout,
            every=0.1,
            or_last=True,
            what=f"run {run_id}",
        )

    def api(self, path: str, **params: Any) -> Any:
        """GET a JSON endpoint (with the token, if any); raise on a non-2xx answer."""
        response = self.get(path, **params)
        response.raise_for_status()
        return response.json()

    def healthz(self) -> dict[str, Any]:
        """GET /healthz once every answered span is in the store (`loaded`)."""
        self.loaded()
        return self.raw_healthz()

    def raw_healthz(self) -> dict[str, Any]:
        """GET /healthz now."""
        response = httpx.get(self.http_endpoint + "/healthz", timeout=30)
        response.raise_for_status()
        return response.json()

    def loaded(self, timeout: float = 60.0) -> None:
        """Wait until every span answered from the ingest log is in the store (a load
        trails the answer by up to ~0.2 s: collector/ingest_log.py; nothing to wait for
        with the log off). Not a timing assertion, as `judged`."""

        def pending() -> int | None:
            try:
                return self.raw_healthz().get("ingest_pending_spans") or 0
            except (httpx.HTTPError, ValueError):
                return None  # not up: nothing to wait for

        eventually(pending, lambda n: not n, timeout=timeout, every=0.02, or_last=True)

    def post_traces(
        self,
        body: bytes,
        content_type: str = "application/x-protobuf",
        *,
        headers: Mapping[str, str] | None = None,
        token: str | None = None,
        timeout: float = 30.0,
    ) -> httpx.Response:
        all_headers = {"Content-Type": content_type, **self.headers(token), **(headers or {})}
        return httpx.post(
            self.http_endpoint + "/v1/traces", content=body, headers=all_headers, timeout=timeout
        )

    def metrics_text(self) -> str:
        """GET /metrics once every answered span is in the store (`loaded`)."""
        self.loaded()
        response = self.get("/metrics")
        response.raise_for_status()
        return response.text

    def metric(self, name: str, **labels: str) -> float:
        """One sample of /metrics (0 if absent)."""
        return metric_value(self.metrics_text(), name, **labels)


def metric_value(text: str, name: str, **labels: str) -> float:
    """The sample `name{labels}` of Prometheus text (labels matched exactly), else 0."""
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        series, _, value = line.rpartition(" ")
        metric_name, _, label_text = series.partition("{")
        if metric_name != name:
            continue
        found = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', label_text))
        if found == labels:
            return float(value)
    return 0.0


class Collectors:
    """Starts `CollectorProcess`es in folders of `make_dir()`, each on a fresh store of
    `stores` (a DuckDB file in its folder by default), and closes them all at `close()`."""

    def __init__(self, make_dir: Callable[[], Path], stores: Stores | None = None) -> None:
        self.make_dir = make_dir
        self.stores = stores
        self.started: list[CollectorProcess] = []

    def __call__(
        self,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        db_name: str = "h.duckdb",
        cls: type[CollectorProcess] | None = None,
    ) -> CollectorProcess:
        workdir = self.make_dir()
        store = self.stores.new(workdir / db_name) if self.stores is not None else None
        proc = (cls or CollectorProcess)(workdir, env=env, args=args, db_name=db_name, store=store)
        self.started.append(proc)
        return proc.start()

    def close(self) -> None:
        for proc in self.started:
            proc.close()


def otlp_exporter(
    collector: CollectorProcess,
    protocol: str = "http",
    *,
    token: str | None = None,
    compression: str | None = None,
    timeout: float = 30.0,
) -> SpanExporter:
    """The real OTLP span exporter (HTTP protobuf or gRPC) pointed at `collector`.

    The timeout is generous because the suite shares two cores with other work: a first
    export into a collector that is still warming up took over 10 s under load, and a
    test about verdicts must not fail on a slow machine.
    """
    token = collector.token if token is None else token
    if protocol == "http":
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(
            endpoint=collector.http_endpoint + "/v1/traces",
            headers={"Authorization": f"Bearer {token}"} if token else None,
            compression=Compression(compression) if compression else None,
            timeout=timeout,
        )
    if protocol == "grpc":
        from grpc import Compression as GrpcCompression
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter(
            endpoint=collector.grpc_endpoint,
            insecure=True,
            headers=(("authorization", f"Bearer {token}"),) if token else None,
            compression=GrpcCompression.Gzip if compression == "gzip" else None,
            timeout=timeout,
        )
    raise ValueError(protocol)


class OTLPSender:
    """Record spans with a real tracer; send exactly those, in one export, for real."""

    def __init__(self, exporter: SpanExporter, service: str = "test-app", **resource: Any) -> None:
        self.exporter = exporter
        self._memory = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": service, **resource})
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self._memory))
        self.tracer = self.provider.get_tracer("handoffscope.tests")
        self.sent: list[ReadableSpan] = []

    def emit(
        self,
        name: str,
        attributes: Mapping[str, Any] | None = None,
        *,
        start_time: int | None = None,
        end_time: int | None = None,
        events: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> ReadableSpan:
        span = self.tracer.start_span(
            name, attributes=dict(attributes or {}), start_time=start_time
        )
        for event_name, event_attributes in events:
            span.add_event(event_name, dict(event_attributes))
        span.end(end_time=end_time)
        return self._memory.get_finished_spans()[-1]

    def pending(self) -> list[ReadableSpan]:
        """Spans recorded and not sent yet."""
        return list(self._memory.get_finished_spans())

    def take(self) -> list[ReadableSpan]:
        """Spans recorded and not sent yet, forgotten by the sender (to send them by hand)."""
        spans = self.pending()
        self._memory.clear()
        return spans

    def send(self, spans: Sequence[ReadableSpan] | None = None) -> SpanExportResult:
        """Export `spans` (default: every span recorded since the last send) in one call."""
        if spans is None:
            spans = self.pending()
            self._memory.clear()
        self.sent.extend(spans)
        return self.exporter.export(list(spans))

    def close(self) -> None:
        self.exporter.shutdown()
        self.provider.shutdown()
