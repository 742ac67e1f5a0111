"""Helpers for the hardening suite: fault servers, reading the file.

The collector under test is always the real process started by the fixtures of
tests/conftest.py; nothing here stands in for it. What this module adds:

- `FaultServer`: a real HTTP server on a free loopback port that answers OTLP exports
  slowly, with 503 + Retry-After, or promptly (counting spans) — what the shim meets when
  its collector misbehaves; `closed_port_url()` for a collector that is down;
- `bearer(token)`, `make_credential(collector, admin, name, kind, services)`: a request's
  auth header, and a credential made through the collector's token API (its token);
- `stored_keys(store)`: the (trace_id, span_id) rows of the collector's store
  (`collector.store`: its DuckDB file, read once the collector has stopped — DuckDB is
  single-writer across processes — or its PostgreSQL database; support/stores.py).

OTLP payloads built by hand are `support.otlp`'s and evidence attributes
`support.evidence`'s: one vocabulary for every folder of tests.
"""

from __future__ import annotations

import gzip
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from support.otlp import PROTOBUF, span_keys
from support.ports import free_port
from support.stores import query

SECOND_NS = 1_000_000_000


# --- reading what the collector kept -------------------------------------------------------


def stored_keys(store: str | Path) -> Counter:
    """(trace_id, span_id) -> rows in the `spans` table of a STOPPED collector's store."""
    rows = query(store, "SELECT trace_id, span_id FROM spans")
    return Counter((t, s) for t, s in rows)


# --- servers the shim meets when its collector misbehaves ----------------------------------


def closed_port_url() -> str:
    """A loopback URL where nothing listens (the port was free a moment ago)."""
    return f"http://127.0.0.1:{free_port()}"


class FaultServer:
    """A real OTLP/HTTP endpoint on loopback that answers the way `mode` says.

    - `ok`: 200 at once, counting the spans it decoded (`spans_received`);
    - `slow`: reads the body, sleeps `delay_s`, then answers 200 (a collector that is
      up but stalled — the exporter's timeout is what ends the wait);
    - `unavailable`: 503 with `Retry-After: 1`, which OTLP exporters retry.
    """

    def __init__(self, mode: str, *, delay_s: float = 2.0) -> None:
        if mode not in ("ok", "slow", "unavailable"):
            raise ValueError(mode)
        self.mode = mode
        self.delay_s = delay_s
        self.requests = 0
        self.spans_received = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server._lock:
                    server.requests += 1
                if server.mode == "slow":
                    server._closing.wait(server.delay_s)
                if server.mode == "unavailable":
                    self._answer(503, {"Retry-After": "1"})
                    return
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                parsed = ExportTraceServiceRequest.FromString(body)
                with server._lock:
                    server.spans_received += len(span_keys(parsed))
                self._answer(200, {})

            def _answer(self, status: int, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Type", PROTOBUF)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                except OSError:
                    pass  # the exporter gave up (its timeout) and closed the connection

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()


def bearer(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def make_credential(
    collector: Any, admin: str, name: str, kind: str, services: list[str] | None = None
) -> str:
    """A credential made through `collector`'s `/api/v1/tokens` with the `admin` token;
    its token (shown this once)."""
    answer = httpx.post(
        collector.http_endpoint + "/api/v1/tokens",
        json={"name": name, "kind": kind, "services": services or []},
        headers=bearer(admin),
        timeout=30,
    )
    assert answer.status_code == 201, answer.text
    made = answer.json()
    assert (made["name"], made["kind"], made["revoked_at"]) == (name, kind, None)
    assert made["services"] == sorted(set(services or []))
    return str(made["token"])
