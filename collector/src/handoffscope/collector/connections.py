"""Connection hygiene for the collector's one HTTP port (OTLP/HTTP, query API, /healthz).

uvicorn's httptools protocol, with the limits it lacks. What a client without a token
could do before (issue 13): keep 20,000 idle or trickling connections open until the
process ran out of file descriptors and /healthz stopped answering; send a 64 MB request
header; hold 40 half-sent 8 MiB bodies (320 MB of RSS); disconnect mid-body for a logged
traceback each.

| limit | setting | beyond it |
|---|---|---|
| a new connection must start a request, a kept-alive one its next | `--idle-timeout-seconds` | closed (`idle_timeout`) |
| request line + headers complete, from their first byte | `--header-timeout-seconds` | 408, closed (`header_timeout`) |
| the whole body, from the end of the headers | `--body-timeout-seconds` | 408 if nothing was answered yet, closed (`body_timeout`) |
| request line + headers | `--max-header-bytes` | 431, closed (`header_too_large`) |
| open connections | `--max-connections` (never more than the fd limit allows, with gRPC's `--max-grpc-connections`) | the oldest connection with no request in the app is closed to admit the new one (`evicted`); with none, 503 + Retry-After (`over_limit`) |
| body bytes being read, all connections together | `--max-inflight-bytes` | 429 + Retry-After, closed |
| header bytes being read, all connections together | `--max-inflight-bytes`, a budget of their own | 429 + Retry-After, closed |

Each close is one count of `handoffscope_http_connections_closed_total{reason}`, never a
log line per client.

Why evict instead of refusing at the cap: refusing new connections while idle ones hold
every slot is exactly the outage to prevent — the operator's /healthz probe is a new
connection. nginx reuses idle keep-alive connections the same way. A connection still
reading its request headers counts as idle: a trickler is what should go first.

Why headers have a budget of their own: with one budget, 64 MiB of half-sent bodies left no
room for the head of the next request — /healthz was refused along with everything else.

Why not uvicorn's own knobs alone: `timeout_keep_alive` only runs after a response (a
connection that never sends a byte has no timer) and any byte resets it, so a trickler
keeps it forever; `limit_concurrency` counts idle connections against requests and
answers 503 without Retry-After, so idle connections would make /healthz fail; the
httptools parser has no header size limit (h11 has one, but costs throughput on every
export). The idle timeout still uses uvicorn's keep-alive timer after a response.
"""

from __future__ import annotations

import asyncio
import resource
import threading
from dataclasses import dataclass, field

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from handoffscope.collector.metrics import Metrics

# reasons (label `reason` of handoffscope_http_connections_closed_total)
CLIENT_DISCONNECT = "client_disconnect"
IDLE_TIMEOUT = "idle_timeout"
HEADER_TIMEOUT = "header_timeout"
BODY_TIMEOUT = "body_timeout"
HEADER_TOO_LARGE = "header_too_large"
EVICTED = "evicted"
OVER_LIMIT = "over_limit"
INFLIGHT_BYTES = "inflight_bytes"
REASONS = (
    CLIENT_DISCONNECT,
    IDLE_TIMEOUT,
    HEADER_TIMEOUT,
    BODY_TIMEOUT,
    HEADER_TOO_LARGE,
    EVICTED,
    OVER_LIMIT,
    INFLIGHT_BYTES,
)

FD_RESERVE = 512
"""File descriptors kept free (at most half the limit) for everything that is not an open
HTTP connection: the DuckDB file and its WAL, gRPC, imports — and the sockets of a flood
in flight: asyncio accepts up to ACCEPT_BACKLOG of them before the first reaches
`connection_made`, can do so again before the connections evicted for the first burst
have released theirs, and so on. `--max-connections` is lowered to the fd limit minus
this, so a flood meets eviction, never `EMFILE` (measured: with 256 kept free and a
backlog of 128, 3,000 connections against a limit of 1,024 still hit it under load)."""

ACCEPT_BACKLOG = 64
"""Listen backlog, which asyncio also uses as the number of connections it accepts in one
go before any of them reaches `connection_made` (where the cap is applied). uvicorn's
default, 2048, let one burst take 2048 descriptors past the cap and hit `EMFILE`; a few
bursts must fit in FD_RESERVE."""

RETRY_AFTER_S = 2
"""Retry-After when refused for lack of connections or in-flight bytes."""

_HEAD_END = b"\r\n\r\n"


class InflightBytes:
    """A budget of request bytes being read at once, shared by every connection."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        # Taken from the event loop and from export handlers; both are quick.
        self._lock = threading.Lock()

    def try_acquire(self, n: int) -> bool:
        with self._lock:
            if self.used + n > self.limit:
                return False
            self.used += n
            return True

    def release(self, n: int) -> None:
        with self._lock:
            self.used -= n


@dataclass
class ConnectionLimits:
    """The limits of one HTTP server, and the state its connections share."""

    metrics: Metrics
    max_connections: int
    idle_timeout_s: float
    header_timeout_s: float
    body_timeout_s: float
    max_header_bytes: int
    inflight: InflightBytes
    """Body bytes (taken by the OTLP/HTTP receiver)."""
    head_inflight: InflightBytes
    """Request line and header bytes (taken here)."""
    idle: dict = field(default_factory=dict)
    """Connections with no request in the app, oldest first (a dict keeps insertion order)."""
    open: set = field(default_factory=set)


def fd_bounded(max_connections: int, max_grpc_connections: int = 0) -> tuple[int, int]:
    """(HTTP cap, gRPC cap), lowered so that the two together cannot exhaust the fd limit.

    Both listeners draw on one descriptor budget, the limit minus FD_RESERVE; gRPC gets at
    most a quarter of it (its senders keep one channel each, an OTel Collector or an SDK
    process; HTTP also serves every dashboard and probe), HTTP the rest.
    """
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return max_connections, max_grpc_connections
    budget = max(2, soft - min(FD_RESERVE, soft // 2))
    grpc_cap = max(1, min(max_grpc_connections, budget // 4)) if max_grpc_connections else 0
    return max(1, min(max_connections, budget - grpc_cap)), grpc_cap


def _plain_answer(status: bytes, extra: bytes = b"") -> bytes:
    return (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: 0\r\nconnection: close\r\n" + extra + b"\r\n"
    )


_408 = _plain_answer(b"408 Request Timeout")
_431 = _plain_answer(b"431 Request Header Fields Too Large")
_503 = _plain_answer(b"503 Service Unavailable", b"retry-after: %d\r\n" % RETRY_AFTER_S)
_429 = _plain_answer(b"429 Too Many Requests", b"retry-after: %d\r\n" % RETRY_AFTER_S)


class LimitedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits of `ConnectionLimits` (set by
    `protocol_class`)."""

    limits: ConnectionLimits

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._timer: asyncio.TimerHandle | None = None
        self._reading_head = True
        self._head_started = False
        self._head_bytes = 0
        self._head_reserved = 0
        self._tail = b""
        self._closed_by_us = False
        self._idle_after_body = False

    # --- lifecycle --------------------------------------------------------------------

    def connection_made(self, transport) -> None:  # type: ignore[override]
        limits = self.limits
        super().connection_made(transport)
        limits.open.add(self)
        if len(limits.open) > limits.max_connections:
            victim = next(iter(limits.idle), None)
            if victim is None:
                self._refuse(_503, OVER_LIMIT)
                return
            victim._refuse(b"", EVICTED)
        self._await_head(limits.idle_timeout_s, IDLE_TIMEOUT)

    def connection_lost(self, exc: Exception | None) -> None:
        limits = self.limits
        limits.open.discard(self)
        limits.idle.pop(self, None)
        self._cancel_timer()
        self._release_head()
        if (
            not self._closed_by_us
            and self.cycle is not None
            and self.cycle.more_body
            and not self.cycle.response_complete
        ):
            limits.metrics.connection_closed(CLIENT_DISCONNECT)
        super().connection_lost(exc)

    def _refuse(self, answer: bytes, reason: str) -> None:
        """Answer (when nothing was answered yet) and close; count `reason` once."""
        if self._closed_by_us or self.transport.is_closing():
            return
        self._closed_by_us = True
        self.limits.metrics.connection_closed(reason)
        # Out of the count now, not when asyncio reports the loss: the fd goes with close().
        self.limits.open.discard(self)
        self.limits.idle.pop(self, None)
        self._cancel_timer()
        self._release_head()
        in_request = not self._reading_head and self.cycle is not None
        if answer and not (in_request and self.cycle.response_started):
            self.transport.write(answer)
        if self.cycle is not None:
            # The app may still be reading this request; it sees a disconnect, not a hang.
            self.cycle.keep_alive = False
        self.transport.close()

    # --- timers -----------------------------------------------------------------------

    def _arm(self, seconds: float, reason: str, answer: bytes) -> None:
        self._cancel_timer()
        self._timer = self.loop.call_later(seconds, self._refuse, answer, reason)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _await_head(self, seconds: float, reason: str) -> None:
        self._reading_head = True
        self._head_started = False
        self._head_bytes = 0
        self._tail = b""
        self.limits.idle[self] = None
        if seconds:
            self._arm(seconds, reason, b"")

    def timeout_keep_alive_handler(self) -> None:
        # uvicorn's idle timer after a response: the same limit, counted.
        self._refuse(b"", IDLE_TIMEOUT)

    # --- reading ----------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        if self._closed_by_us:
            return
        if self._reading_head:
            if not self._head_started:
                self._head_started = True
                self._arm(self.limits.header_timeout_s, HEADER_TIMEOUT, _408)
            if not self._count_head(data):
                return
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError:
            msg = "Invalid HTTP request received."
            self.logger.warning(msg)  # rate-limited by handoffscope.collector.lograte
            self.send_400_response(msg)

    def _count_head(self, data: bytes) -> bool:
        """Count the header bytes in `data` against both limits; False once refused."""
        end = (self._tail + data).find(_HEAD_END)
        part = len(data) if end < 0 else max(0, end + len(_HEAD_END) - len(self._tail))
        self._tail = data[-(len(_HEAD_END) - 1) :]
        self._head_bytes += part
        if self._head_bytes > self.limits.max_header_bytes:
            self._refuse(_431, HEADER_TOO_LARGE)
            return False
        if not self.limits.head_inflight.try_acquire(part):
            self._refuse(_429, INFLIGHT_BYTES)
            return False
        self._head_reserved += part
        return True

    def _release_head(self) -> None:
        if self._head_reserved:
            self.limits.head_inflight.release(self._head_reserved)
            self._head_reserved = 0

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self.limits.idle.pop(self, None)
        self._release_head()
        self._arm(self.limits.body_timeout_s, BODY_TIMEOUT, _408)
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._cancel_timer()
        super().on_message_complete()
        if self._idle_after_body:
            self._idle_after_body = False
            self._await_head(0, IDLE_TIMEOUT)

    def on_response_complete(self) -> None:
        pipelined = bool(self.pipeline)
        body_done = self.cycle is None or not self.cycle.more_body
        super().on_response_complete()
        if pipelined or self.transport.is_closing():
            return
        if body_done:
            # uvicorn armed its keep-alive timer (timeout_keep_alive = idle timeout).
            self._await_head(0, IDLE_TIMEOUT)
        else:
            # Answered before the body was read (a 415, say): the rest of the body is still
            # arriving, under the body timeout, and is not the next request's head.
            self._idle_after_body = True


def protocol_class(limits: ConnectionLimits) -> type[LimitedProtocol]:
    """A protocol class for uvicorn's `Config(http=...)`, bound to `limits`."""
    return type("HandoffscopeHTTPProtocol", (LimitedProtocol,), {"limits": limits})
