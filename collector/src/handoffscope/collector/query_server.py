"""`handoffscope api`: the query API alone, over a store the collectors write.

One more process to point dashboards at — beside the collectors on a shared PostgreSQL
(docs/scale-out.md), or over a DuckDB file no collector holds (a copy, for a review). It
serves `/api/v1/*`, `/openapi.json`, `/docs` and `/healthz`, exactly as a collector does
(the same app, `query.api.query_app`, behind the same Host check and bearer token), and
nothing else: no OTLP receiver, no writer, no judge, no schema steps. The store must
already be at this version's schema — a collector of the same version creates and
upgrades it — and is otherwise refused with what to do.

`/healthz` reports the judge's backlog as the collectors do (on PostgreSQL the shared
work list, read every half second; on a DuckDB file the commits after the judge's
mark), so the dashboard's "verdicts N s behind" holds whichever process it reads.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from handoffscope.collector import connections
from handoffscope.collector.auth import BearerAuth
from handoffscope.collector.config import CollectorConfig, QueryConfig
from handoffscope.collector.credentials import Credentials
from handoffscope.collector.engine import ENGINE_VERSION_KEY
from handoffscope.collector.engine.judge import Judge
from handoffscope.collector.engine.leased_judge import LeasedJudge
from handoffscope.collector.hosts import AllowedHosts
from handoffscope.collector.metrics import Metrics
from handoffscope.collector.query.api import query_app
from handoffscope.collector.server import JSON_ERRORS, JUDGE_DEGRADED_S, _bind, _say, http_server
from handoffscope.collector.store import statements
from handoffscope.collector.store.duckdb_store import DuckDBStore, StoreError
from handoffscope.collector.store.interface import Store
from handoffscope.collector.store.postgres_store import PostgresStore
from handoffscope.collector.store.steps import ddl_dir, read_steps, require_steps
from handoffscope.instrumentation import semconv as sc

log = logging.getLogger("handoffscope.api")


def open_read_only(config: QueryConfig) -> Store:
    """The store, read-only, with both schemas (store and health engine) current."""
    store: Store
    if config.shared_store:
        store = PostgresStore(config.store_target, read_only=True)
    else:
        store = DuckDBStore(config.store_target, read_only=True)
    try:
        con = store.cursor()
        try:
            steps = read_steps(ddl_dir("engine", statements.dialect(con)))
            require_steps(con, steps, ENGINE_VERSION_KEY, what="health engine")
        finally:
            con.close()
    except BaseException:
        store.close()
        raise
    return store


def app_for(
    config: QueryConfig,
    store: Store,
    judge: Judge | LeasedJudge,
    credentials: Credentials | None = None,
):
    """The query app with /healthz, behind the Host check and the credentials (by default
    HANDOFFSCOPE_TOKEN alone)."""

    async def healthz(request: Request) -> Response:
        lag = judge.lag_seconds()
        status = "ok"
        if judge.failing:
            status = "degraded: store unreachable"
        elif lag > JUDGE_DEGRADED_S:
            status = "degraded: verdicts behind"
        return JSONResponse(
            {
                "status": status,
                "schema_version": sc.SCHEMA_VERSION,
                "store_version": store.store_version,
                "query_only": True,
                "judge_lag_seconds": round(lag, 3),
                "judge_pending_commits": judge.pending_commits,
            }
        )

    guard = credentials or Credentials(config.token)
    app = query_app(
        store,
        None,
        config,
        routes=[Route("/healthz", healthz, methods=["GET"])],
        exception_handlers=JSON_ERRORS,
        credentials=guard,
    )
    guarded = BearerAuth(app, guard)
    return AllowedHosts(guarded, config.host_names)


def run(config: QueryConfig) -> int:
    """Serve until SIGTERM / Ctrl-C; return the process exit code."""
    try:
        store = open_read_only(config)
    except StoreError as exc:
        print(f"handoffscope api: {exc}", file=sys.stderr, flush=True)
        return 2
    judge: Judge | LeasedJudge
    if isinstance(store, PostgresStore):
        judge = LeasedJudge(store, lambda: None)
        judge.start(judging=False)  # watches the shared backlog, never takes the lease
    else:
        assert isinstance(store, DuckDBStore)
        judge = Judge(store, None)
    where = store.path if isinstance(store.path, str) else store.path.resolve()
    credentials = Credentials(config.token, store)
    credentials.start()
    http_sock = None
    # The collector's connection hygiene, at its defaults (docs/security.md).
    defaults = CollectorConfig()
    limits = connections.ConnectionLimits(
        metrics=Metrics(),
        max_connections=defaults.max_connections,
        idle_timeout_s=defaults.idle_timeout_seconds,
        header_timeout_s=defaults.header_timeout_seconds,
        body_timeout_s=defaults.body_timeout_seconds,
        max_header_bytes=defaults.max_header_bytes,
        inflight=connections.InflightBytes(defaults.max_inflight_bytes),
        head_inflight=connections.InflightBytes(defaults.max_inflight_bytes),
    )
    try:
        http_sock = _bind(config.host, config.http_port)
        port = http_sock.getsockname()[1]
        server = http_server(
            app_for(config, store, judge, credentials),
            limits,
            log_level=config.log_level,
            idle_timeout_s=defaults.idle_timeout_seconds,
        )
        host = f"[{config.host}]" if ":" in config.host else config.host
        server.on_started = lambda: _say(
            f"handoffscope api ready: http=http://{host}:{port} store={where} "
            f"auth={'on' if credentials.enabled else 'off'} (query API /api/v1, /docs, /healthz; "
            f"no ingest; Ctrl-C or SIGTERM to stop)"
        )
        asyncio.run(server.serve(sockets=[http_sock]))
    except OSError as exc:
        print(f"handoffscope api: cannot listen: {exc}", file=sys.stderr, flush=True)
        return 2
    finally:
        if http_sock is not None:
            http_sock.close()
        judge.close()
        credentials.stop()
        store.close()
    _say(f"handoffscope api stopped ({where})")
    return 0
