"""One collector process: store, health engine, writer, both receivers, the HTTP app.

`run(config)` opens the DuckDB file (applying schema steps), installs and loads the
health engine, starts the writer thread, the judge thread (verdicts behind the
acknowledgement, `engine/judge.py`), the OTLP/gRPC server and the HTTP server (uvicorn +
one FastAPI app, `query.api.query_app`) that serves, on one port:

- `POST /v1/traces` — OTLP/HTTP receiver (`receiver/otlp_http.py`), a plain Starlette
  route like the next two: they take raw bytes and write their own answers, nothing a
  parameter or response model would describe;
- `POST /v1/logs`, `POST /v1/metrics` — accepted and discarded (traces only; an app that
  exports every signal to one endpoint gets no export errors);
- `GET /healthz` — `{"status", "schema_version", "store_version", "spans_stored",
  "judge_lag_seconds", "judge_pending_commits"}`, no auth;
- `GET /metrics` — Prometheus text (`metrics.py`, with the health families of `health.py`);
- `/api/v1/*`, `/openapi.json`, `/docs` — the query API (`query/`), reading through
  `store.cursor()`.

One app rather than a Starlette app with the API mounted in it: one router, so the JSON
404/405 answers and the Host and token middleware are the same for every path, and the
API's paths are its real paths (a mount would need a root_path for the document).

With `--notify` or `--notify-config` it also runs the notifier (`notify/notifier.py`), a
background thread that reads the derived tables and posts to webhooks; it stops before
the store closes.

The HTTP port keeps connection hygiene (`connections.py`: timeouts, header and in-flight
byte limits, a connection cap) and answers only allowed Host names (`hosts.py`).

It prints one startup line once everything listens (ports, db path, auth on/off) and,
on SIGTERM or Ctrl-C: stops accepting, lets in-flight exports finish (they wait for their
commit), commits whatever is queued, lets the judge catch up with it for up to
CLOSE_BUDGET_S (30 s; the rest is judged after the next start), checkpoints and closes
the file, prints a closing
line and exits 0. A second Ctrl-C skips waiting for HTTP clients, never the final commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
import threading
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa
import uvicorn
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from handoffscope.collector import connections, lograte
from handoffscope.collector.auth import BearerAuth
from handoffscope.collector.config import CollectorConfig
from handoffscope.collector.credentials import CredentialError, Credentials
from handoffscope.collector.engine import HealthEngine
from handoffscope.collector.engine.judge import Judge
from handoffscope.collector.engine.leased_judge import LeasedJudge
from handoffscope.collector.engine.protocol import Engine
from handoffscope.collector.engine.shards import ShardedEngine
from handoffscope.collector.engine.worker import ProcessEngine
from handoffscope.collector.health import HealthMetrics
from handoffscope.collector.hosts import AllowedHosts
from handoffscope.collector.ingest_log import MARK_KEY, IngestLog, Position, directory_for
from handoffscope.collector.metrics import Metrics, scoped
from handoffscope.collector.notify.notifier import Notifier
from handoffscope.collector.notify.routing import RoutingError
from handoffscope.collector.notify.routing import load as load_routing
from handoffscope.collector.pipeline import COMMIT_TIMEOUT_S, ExportHandler
from handoffscope.collector.prices import PriceBook, PriceFileError
from handoffscope.collector.processor.allowlist import REFUSAL_SENTENCES, Allowlist
from handoffscope.collector.query.api import query_app
from handoffscope.collector.receiver import otlp_http
from handoffscope.collector.receiver.otlp_grpc import OTLPGRPCReceiver, start_grpc_server
from handoffscope.collector.store.duckdb_store import DuckDBStore, StoreError
from handoffscope.collector.store.interface import Store
from handoffscope.collector.store.postgres_store import PostgresStore
from handoffscope.collector.store.records import PARTITIONS
from handoffscope.collector.writer import Writer
from handoffscope.instrumentation import semconv as sc

INGEST_ONLY = "ingest only: judge off"
"""/healthz status with --judge off: healthy, but no verdicts are being derived."""
JUDGE_DEGRADED_S = 60.0
"""/healthz says "degraded" once the oldest unjudged commit is older than this."""

log = logging.getLogger("handoffscope.collector")

GRPC_GRACE_S = COMMIT_TIMEOUT_S
"""How long in-flight gRPC exports may take to finish at shutdown."""


# --- the parts and the HTTP app --------------------------------------------------------


@dataclass
class Collector:
    """The parts of one collector around a store and an engine (not started yet)."""

    config: CollectorConfig
    store: Store
    engine: object
    metrics: Metrics
    writer: Writer
    judge: Judge | LeasedJudge
    handler: ExportHandler
    app: Any
    """The ASGI app: OTLP/HTTP receiver, /healthz, /metrics and the query API."""
    limits: connections.ConnectionLimits
    """What the HTTP port's connections share (give `connections.protocol_class` to uvicorn)."""
    grpc_max_connections: int
    """`--max-grpc-connections`, lowered with the HTTP cap to fit the fd limit."""
    credentials: Credentials
    """Who may send and read (HANDOFFSCOPE_TOKEN and the store's credentials), kept fresh."""


def engine_settings(config: CollectorConfig) -> dict:
    """The health engine's arguments: the collector's judgment settings."""
    return {
        "grace_seconds": config.grace_seconds,
        "retention_days": config.retention_days,
        "require_outcome": config.require_outcome,
        "max_handoffs_per_run": config.max_handoffs_per_run,
        "max_hot_handoffs": config.max_hot_handoffs,
        # A bound method of a picklable book: the judge's worker processes load the same
        # file by path (prices.py).
        "price": PriceBook.load(config.prices).cost,
    }


def engine_for(config: CollectorConfig) -> HealthEngine:
    """A health engine with the collector's judgment settings, in this process."""
    return HealthEngine(**engine_settings(config))


IN_WORKERS = (ProcessEngine, ShardedEngine)
"""Engines in worker processes (`--judge on`)."""


def engine_in_workers(config: CollectorConfig) -> ProcessEngine | ShardedEngine:
    """The engine of `--judge on`: in one worker process, or `--judge-workers` of them."""
    if config.judge_workers > 1:
        return ShardedEngine(
            config.judge_workers, nice=config.judge_nice, **engine_settings(config)
        )
    return ProcessEngine(nice=config.judge_nice, **engine_settings(config))


def partitions_held(judge: Judge | LeasedJudge, judging: bool) -> int:
    """How many of the runs' partitions this collector judges: its share on PostgreSQL,
    every one on a DuckDB file (none with --judge off)."""
    if not judging:
        return 0
    held = getattr(judge, "parts", None)
    return PARTITIONS if held is None else len(held)


def open_store(config: CollectorConfig) -> Store:
    """The store `--store` / `--db` names (schema steps applied); StoreError says why not."""
    if config.shared_store:
        return PostgresStore(config.store_target, retention_days=config.retention_days)
    return DuckDBStore(config.store_target, memory_limit=config.memory_limit or None)


def _ingest_log(config: CollectorConfig, store: Store) -> IngestLog | None:
    """The ingest log of `--ingest-log on` (a DuckDB file's only), positioned at the mark
    the file holds."""
    if not config.logging_ingest or not isinstance(store, DuckDBStore):
        return None
    return IngestLog(directory_for(store.path), Position.parse(store.get_meta(MARK_KEY)))


def assemble(config: CollectorConfig, store: Store, engine: Engine) -> Collector:
    """Wire metrics, writer, receivers' handler and the HTTP app; start nothing.

    On a DuckDB file the judge uses `engine` (loaded by the caller, or on the judge's
    first step when it is the worker's). On PostgreSQL the judge loads an engine each time
    it takes the judge lease (engine/leased_judge.py): the worker's, or one of its own.
    """
    metrics = Metrics(max_services=config.metrics_max_services)
    judge: Judge | LeasedJudge
    if isinstance(store, DuckDBStore):
        judge = Judge(store, engine, retention_days=config.retention_days, nice=config.judge_nice)
    else:
        assert isinstance(store, PostgresStore)
        # Each lease loads its engine afresh: the worker's (`--judge on`), reloaded, or a
        # new one in this process (`--judge thread`).
        make = (lambda: engine) if isinstance(engine, IN_WORKERS) else lambda: engine_for(config)
        judge = LeasedJudge(
            store, make, retention_days=config.retention_days, nice=config.judge_nice
        )
    metrics.engine_stats = lambda: dict(getattr(judge.engine, "stats", {}))
    metrics.engine_memory = lambda: (
        int(getattr(judge.engine, "hot_size", 0)),
        config.max_hot_handoffs,
    )
    if isinstance(engine, IN_WORKERS):
        metrics.judge_worker = lambda: (engine.worker_starts, engine.worker_pids)
    # With --judge off the judge still counts the commits it has not judged (its lag
    # grows, truthfully); only its thread is not started (see run()).
    judging = config.judge != "off"
    metrics.judge_lag = lambda: (judge.lag_seconds(), judge.pending_commits)
    metrics.judge_lease = lambda: judging and getattr(judge, "holding", True)
    metrics.judge_partitions = lambda: partitions_held(judge, judging)
    writer = Writer(
        store,
        judge,
        metrics,
        queue_batches=config.queue_batches,
        retention_days=config.retention_days,
        ingest_log=_ingest_log(config, store),
    )
    handler = ExportHandler(
        Allowlist(max_clock_skew_s=config.max_clock_skew_seconds), writer, metrics
    )
    http_cap, grpc_cap = connections.fd_bounded(config.max_connections, config.max_grpc_connections)
    limits = connections.ConnectionLimits(
        metrics=metrics,
        max_connections=http_cap,
        idle_timeout_s=config.idle_timeout_seconds,
        header_timeout_s=config.header_timeout_seconds,
        body_timeout_s=config.body_timeout_seconds,
        max_header_bytes=config.max_header_bytes,
        inflight=connections.InflightBytes(config.max_inflight_bytes),
        head_inflight=connections.InflightBytes(config.max_inflight_bytes),
    )
    metrics.refusal_reasons = tuple(REFUSAL_SENTENCES)
    metrics.close_reasons = connections.REASONS
    metrics.connections_open = lambda: len(limits.open)
    metrics.inflight_bytes = lambda: limits.inflight.used + limits.head_inflight.used
    credentials = Credentials(config.token, store)
    credentials.start()
    receiver = otlp_http.OTLPHTTPReceiver(
        handler,
        max_body_bytes=config.max_body_bytes,
        credentials=credentials,
        inflight=limits.inflight,
    )

    async def healthz(request: Request) -> Response:
        ok = writer.alive
        lag = judge.lag_seconds()
        if not ok:
            status = "writer stopped"
        elif not judging:
            status = INGEST_ONLY
        elif not judge.alive:
            status = "degraded: judge stopped"
        elif judge.failing or lag > JUDGE_DEGRADED_S:
            status = "degraded: verdicts behind"
        else:
            status = "ok"
        # Upstream first: spans leave the ingest log's count only once their commit is the
        # judge's (writer._write), so 0 here and then 0 commits pending means all judged.
        ingest_pending = writer.load_pending_spans
        return JSONResponse(
            {
                "status": status,
                "schema_version": sc.SCHEMA_VERSION,
                "store_version": store.store_version,
                "spans_stored": writer.spans_stored,
                # Verdicts trail the acknowledgement (collector/engine/judge.py): how far.
                "judge_lag_seconds": round(lag, 3),
                "judge_pending_commits": judge.pending_commits,
                # Of the runs' partitions, those this collector judges (a shared store's
                # collectors share them out: engine/leased_judge.py).
                "judge_partitions_held": partitions_held(judge, judging),
                # Answered (in the ingest log) but not in the store yet: 0 with it off.
                "ingest_pending_spans": ingest_pending,
            },
            status_code=200 if ok else 503,
        )

    health = HealthMetrics(store, grace_seconds=config.grace_seconds, top=config.metrics_top)
    metrics.families.append(health.render)

    async def metrics_text(request: Request) -> Response:
        # In the thread pool: the health families read the store (a few small queries,
        # cached), which must not hold up the event loop that serves OTLP/HTTP.
        try:
            scope = credentials.scope(
                request.headers.get("authorization"), request.headers.get(sc.SCOPE_HEADER)
            )
        except CredentialError as exc:
            return JSONResponse({"error": str(exc)}, status_code=400)
        text = await run_in_threadpool(metrics.render, scope)
        # A reader scoped to services sees their series only (docs/security.md): ranked
        # among them, and any line of another service left out.
        return PlainTextResponse(scoped(text, scope), media_type="text/plain; version=0.0.4")

    raw = [
        Route(otlp_http.PATH, receiver.export, methods=["POST"]),
        *(Route(path, receiver.discard, methods=["POST"]) for path in otlp_http.DISCARDED_PATHS),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics_text, methods=["GET"]),
    ]
    app = query_app(
        store,
        engine,
        config,
        routes=raw,
        # Every answer of this server is JSON, including for paths no route matches (a
        # run id with a newline does not match the run route): docs/api.md promises it.
        # The path is not echoed back: it is the caller's input, not ours to repeat.
        exception_handlers=JSON_ERRORS,
        credentials=credentials,
    )
    guarded = BearerAuth(app, credentials)
    return Collector(
        config=config,
        store=store,
        engine=engine,
        metrics=metrics,
        writer=writer,
        judge=judge,
        handler=handler,
        # The Host check comes first: a rebinding page must not even learn whether its
        # guess at the token was right.
        app=AllowedHosts(guarded, config.host_names),
        limits=limits,
        grpc_max_connections=grpc_cap,
        credentials=credentials,
    )


# --- the process ------------------------------------------------------------------------


class _Server(uvicorn.Server):
    """uvicorn, minus its habit of re-raising the signal after a graceful shutdown.

    uvicorn re-raises SIGTERM/SIGINT once it has stopped so the default handler ends the
    process; we still have the queue to commit and the file to close, and want exit 0.
    """

    on_started = staticmethod(lambda: None)
    on_stopping = staticmethod(lambda: None)

    @contextlib.contextmanager
    def capture_signals(self):
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    async def startup(self, sockets=None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self.on_started()

    async def shutdown(self, sockets=None) -> None:
        self.on_stopping()
        await super().shutdown(sockets=sockets)


async def _json_error(request: Request, exc: Exception) -> Response:
    code = getattr(exc, "status_code", 404)
    what = "method not allowed" if code == 405 else "not found"
    return JSONResponse({"error": f"{what} (see /docs for the endpoints)"}, status_code=code)


OUT_OF_MEMORY_RETRY_S = 5


async def _out_of_memory(request: Request, exc: Exception) -> Response:
    """A query the DuckDB file's memory limit could not hold: 503, try again, and why.

    Queries share `--memory-limit` with ingest and the judge, so one that fails under load
    may well pass a moment later; a 500 said neither that nor what to change."""
    log.warning("query %s ran out of the database's memory: %s", request.url.path, exc)
    return JSONResponse(
        {
            "error": "the database ran out of memory answering this (its --memory-limit, "
            "shared with ingest and the judge); try again, or raise --memory-limit"
        },
        status_code=503,
        headers={"Retry-After": str(OUT_OF_MEMORY_RETRY_S)},
    )


JSON_ERRORS: dict = {
    404: _json_error,
    405: _json_error,
    duckdb.OutOfMemoryException: _out_of_memory,
}
"""The query app's error answers (JSON, like every answer of it)."""


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # Accepted sockets inherit this on Linux. Without it, Nagle + delayed ACK stall every
    # small keep-alive answer (the dashboard's /api calls) by ~40 ms.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def http_server(
    app: Any,
    limits: connections.ConnectionLimits,
    *,
    log_level: str,
    idle_timeout_s: float,
    graceful_s: int | None = None,
) -> _Server:
    """uvicorn serving `app` with the port's connection hygiene (`connections.py`)."""
    lograte.install()
    return _Server(
        uvicorn.Config(
            app,
            http=connections.protocol_class(limits),
            backlog=connections.ACCEPT_BACKLOG,
            lifespan="off",
            # No logging config of uvicorn's own: its loggers propagate to ours, which
            # carry the rate limit (lograte.py).
            log_config=None,
            log_level="warning" if log_level == "info" else log_level,
            access_log=False,
            server_header=False,
            timeout_keep_alive=idle_timeout_s,  # type: ignore[arg-type]
            # Not limit_concurrency: see connections.py (idle connections would make
            # /healthz answer 503); the cap is --max-connections.
            timeout_graceful_shutdown=graceful_s,
        )
    )


def _say(line: str) -> None:
    print(line, flush=True)


def _port_taken(exc: OSError, host: str, port: int, flag: str) -> str:
    return (
        f"cannot listen on {host}:{port} ({exc.strerror or exc}): choose another port with "
        f"{flag} (env HANDOFFSCOPE_{flag[2:].upper().replace('-', '_')}), or 0 for any free one"
    )


def _claim_ports(config: CollectorConfig) -> socket.socket:
    """Bind the HTTP port and check the gRPC one before anything else happens, so a port
    in use is one line naming its flag — not a DuckDB file created, schema steps logged,
    and gRPC's own error. (gRPC binds its port itself, later: the check closes its probe,
    so a port taken in between still fails there, with the same sentence.)"""
    try:
        http_sock = _bind(config.host, config.http_port)
    except OSError as exc:
        raise OSError(_port_taken(exc, config.host, config.http_port, "--http-port")) from None
    if config.grpc_port:
        try:
            _bind(config.host, config.grpc_port).close()
        except OSError as exc:
            http_sock.close()
            raise OSError(_port_taken(exc, config.host, config.grpc_port, "--grpc-port")) from None
    return http_sock


def run(config: CollectorConfig) -> int:
    """Run the collector until SIGTERM / Ctrl-C; return the process exit code."""
    try:
        http_sock = _claim_ports(config)
    except OSError as exc:
        print(f"handoffscope collector: {exc}", file=sys.stderr, flush=True)
        return 2
    try:
        routing = load_routing(config)
    except RoutingError as exc:
        http_sock.close()
        print(f"handoffscope collector: {exc}", file=sys.stderr, flush=True)
        return 2
    try:
        PriceBook.load(config.prices)  # read and checked once, here: a bad file stops the start
    except PriceFileError as exc:
        http_sock.close()
        print(f"handoffscope collector: {exc}", file=sys.stderr, flush=True)
        return 2
    try:
        store = open_store(config)
    except StoreError as exc:
        http_sock.close()
        print(f"handoffscope collector: {exc}", file=sys.stderr, flush=True)
        return 2

    shared = not isinstance(store, DuckDBStore)
    # `--judge on`: the engine in a worker process (engine/worker.py).
    engine: HealthEngine | ProcessEngine | ShardedEngine = (
        engine_in_workers(config) if config.judge == "on" else engine_for(config)
    )
    where = store.path if isinstance(store.path, str) else store.path.resolve()
    writer: Writer | None = None
    judge: Judge | LeasedJudge | None = None
    notifier: Notifier | None = None
    parts: Collector | None = None
    grpc_server = None
    try:
        # pyarrow imports pandas on its first conversion of a Python list (to look for
        # pandas types): 5-15 s on a loaded machine, measured, which held the first export
        # past a 10 s exporter timeout. The entry points refuse pandas (cli.py), so this
        # costs nothing there; a process that imports the collector and has pandas pays
        # it here, before "ready", rather than in the first export.
        pa.array([], pa.string())
        engine.install(store.con)
        if not shared and isinstance(engine, IN_WORKERS):
            engine.start()  # loads on the judge's first step, in the judge's transaction
        elif not shared:
            engine.load(store.con)
        # On PostgreSQL the worker starts when this collector first takes the judge lease
        # (a collector that never holds it never pays for one).
        parts = assemble(config, store, engine)
        writer = parts.writer
        judge = parts.judge
        writer.start()
        judge.start(judging=config.judge != "off")
        if routing:
            notifier = Notifier(
                store,
                routing,
                grace_seconds=config.grace_seconds,
                stuck_factor=config.notify_stuck_factor,
                dashboard_url=config.dashboard_url,
                poll_seconds=config.notify_poll_seconds,
                retention_days=config.retention_days,
                max_age_seconds=config.notify_max_age_seconds,
            )
            notifier.start()
            parts.metrics.families.append(notifier.render)
        try:
            grpc_server, grpc_port = start_grpc_server(
                OTLPGRPCReceiver(parts.handler, credentials=parts.credentials),
                config.host,
                config.grpc_port,
                max_message_bytes=config.max_body_bytes,
                max_connections=parts.grpc_max_connections,
                handshake_timeout_s=config.header_timeout_seconds,
                max_metadata_bytes=config.max_header_bytes,
            )
        except OSError as exc:
            raise OSError(_port_taken(exc, config.host, config.grpc_port, "--grpc-port")) from None
        http_port = http_sock.getsockname()[1]
        server = http_server(
            parts.app,
            parts.limits,
            log_level=config.log_level,
            idle_timeout_s=config.idle_timeout_seconds,
            graceful_s=int(COMMIT_TIMEOUT_S) + 5,
        )
        host = f"[{config.host}]" if ":" in config.host else config.host
        grpc_stopped: list[threading.Event] = []
        server.on_started = lambda: _say(
            f"handoffscope collector ready: http=http://{host}:{http_port} "
            f"grpc={host}:{grpc_port} {'store' if shared else 'db'}={where} "
            f"auth={'on' if parts.credentials.enabled else 'off'} spans={writer.spans_stored} "
            f"notify={len(routing.destinations)} judge={config.judge} "
            + (f"judge_workers={config.judge_workers} " if config.judge_workers > 1 else "")
            + ("ingest_log=on " if writer.log is not None else "")
            + (f"prices={config.prices} " if config.prices else "")
            + "(OTLP/HTTP /v1/traces, OTLP/gRPC, query API /api/v1, /healthz, /metrics; "
            "Ctrl-C or SIGTERM to stop)"
        )
        # Stop gRPC intake together with HTTP intake; in-flight calls get GRPC_GRACE_S.
        server.on_stopping = lambda: grpc_stopped.append(grpc_server.stop(GRPC_GRACE_S))
        asyncio.run(server.serve(sockets=[http_sock]))
        for event in grpc_stopped:
            event.wait()
    except OSError as exc:
        print(f"handoffscope collector: {exc}", file=sys.stderr, flush=True)
        return 2
    finally:
        if grpc_server is not None:
            grpc_server.stop(0)
        http_sock.close()
        if notifier is not None:
            notifier.close()  # before the store closes: it records the outcomes it knows
        if writer is not None:
            writer.close()
        if judge is not None:
            judge.close()
        if isinstance(engine, IN_WORKERS):
            engine.close()
        stored = writer.spans_stored if writer is not None else 0
        if parts is not None:
            parts.credentials.stop()
        store.close()
    closed = "connections closed" if shared else "file closed"
    _say(f"handoffscope collector stopped: {stored} spans in {where}; {closed}")
    return 0
