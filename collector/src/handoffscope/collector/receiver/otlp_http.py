"""OTLP/HTTP receiver: `POST /v1/traces`, per the OTLP specification.

`POST /v1/logs` and `POST /v1/metrics` are accepted and discarded (`discard`): the
collector judges traces only, but frameworks' documented setups (Microsoft Agent
Framework's, for one) export all three signals to one endpoint, and a 404 there fills the
app's log with export errors. Their bodies are read within the same limits and never
decoded or kept; each export is counted (`handoffscope_otlp_discarded_total`) and the
first of each signal is named in the log once an hour.

| request | answer |
|---|---|
| protobuf or JSON export, committed | 200, `ExportTraceServiceResponse` in the request's encoding; `partial_success {rejected_spans, error_message}` when spans were refused (the rest are stored) |
| body not decodable | 400 |
| missing, unknown or revoked bearer token (when auth is on, docs/security.md) | 401 |
| a token whose kind may not send spans (a read credential) | 403 |
| body over `--max-body-bytes` (by Content-Length, while reading, or once inflated) | 413, connection closed |
| body would take the bytes being read past `--max-inflight-bytes` | 429 with `Retry-After`, connection closed |
| Content-Type other than `application/x-protobuf` / `application/json`, or an unknown Content-Encoding | 415 |
| writer queue full | 429 with `Retry-After` |
| shutting down, or the commit failed | 503 with `Retry-After` |

Every 4xx/5xx body is a `google.rpc.Status` (protobuf for protobuf requests, JSON
otherwise) whose message says what is wrong. 429 and 503 are the codes OTLP exporters
retry; the rest they do not, which is right: re-sending a malformed body cannot help.

Memory. A body is read only once its size is reserved in the shared in-flight budget
(`connections.InflightBytes`): up front by Content-Length, chunk by chunk for a chunked
body; the reservation is held until the export is answered. Answers that leave the body
unread close the connection, so the rest of it is not read only to be thrown away.

Event loop. A body larger than `OFF_LOOP_BYTES` is inflated, decoded and allowlisted in a
worker thread: a 16 MB OTLP/JSON body took the loop ~2 s, during which no other request
(not even /healthz) was answered. Small ones stay on the loop, where the hop would cost
more than the work.

A client that disconnects mid-body is counted by the connection
(`handoffscope_http_connections_closed_total{reason="client_disconnect"}`) and otherwise
ignored: there is nobody to answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from concurrent.futures import Future

from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from handoffscope.collector import metrics as m
from handoffscope.collector.connections import RETRY_AFTER_S, InflightBytes
from handoffscope.collector.credentials import INGEST, Credentials, refusal
from handoffscope.collector.otlp import decode
from handoffscope.collector.pipeline import (
    COMMIT_TIMEOUT_S,
    RETRY_AFTER_CLOSED_S,
    ExportHandler,
    retry_after_full,
)
from handoffscope.collector.processor.allowlist import SpanBatch
from handoffscope.collector.writer import QueueFull, WriterClosed

PATH = "/v1/traces"
DISCARDED_PATHS = {"/v1/logs": "logs", "/v1/metrics": "metrics"}
"""OTLP signals accepted and thrown away, by path (`OTLPHTTPReceiver.discard`)."""
OFF_LOOP_BYTES = 256 * 1024
"""Bodies larger than this are decoded in a worker thread (see the module docstring)."""
_CLOSE = {"Connection": "close"}
DISCARD_NOTE_EVERY_S = 3600.0

log = logging.getLogger(__name__)
_noted: dict[str, float] = {}


def note_discarded(signal: str, transport: str) -> None:
    """Say in the log, once an hour per signal, that its exports are thrown away."""
    now = time.monotonic()
    last = _noted.get(signal)
    if last is not None and now - last < DISCARD_NOTE_EVERY_S:
        return
    _noted[signal] = now
    log.info(
        "OTLP %s exports received over %s are accepted and discarded: the collector judges "
        "traces only (nothing of them is stored; handoffscope_otlp_discarded_total counts them)",
        signal,
        transport,
    )


class _NoBudget(Exception):
    """The in-flight byte budget cannot take this body now (429, Retry-After)."""


def _status_response(
    http_status: int,
    code: int,
    message: str,
    content_type: str,
    headers: dict[str, str] | None = None,
) -> Response:
    if content_type == decode.PROTOBUF:
        body = status_pb2.Status(code=code, message=message).SerializeToString()
    else:
        content_type = decode.JSON
        body = json.dumps({"code": code, "message": message}).encode()
    return Response(body, status_code=http_status, media_type=content_type, headers=headers)


class _Reservation:
    """Bytes of one request held in the in-flight budget, released when it is answered."""

    def __init__(self, budget: InflightBytes) -> None:
        self.budget = budget
        self.held = 0

    def take(self, n: int) -> None:
        if not self.budget.try_acquire(n):
            raise _NoBudget(
                f"{self.budget.used} request bytes in flight (--max-inflight-bytes "
                f"{self.budget.limit})"
            )
        self.held += n

    def release(self) -> None:
        self.budget.release(self.held)
        self.held = 0


async def _read_body(request: Request, limit: int, reservation: _Reservation) -> bytearray:
    # One growing buffer, not a list of chunks joined at the end: the join would hold the
    # body twice at its peak. Every decoder downstream takes a bytearray as it is.
    body = bytearray()
    async for chunk in request.stream():
        if len(body) + len(chunk) > limit:
            raise decode.BodyTooLarge(f"body exceeds {limit} bytes (--max-body-bytes)")
        if len(body) + len(chunk) > reservation.held:
            reservation.take(len(body) + len(chunk) - reservation.held)
        body += chunk
    return body


class OTLPHTTPReceiver:
    """The `/v1/traces` endpoint (a Starlette endpoint: `receiver.export`)."""

    def __init__(
        self,
        handler: ExportHandler,
        *,
        max_body_bytes: int,
        credentials: Credentials,
        inflight: InflightBytes,
    ) -> None:
        self.handler = handler
        self.metrics = handler.metrics
        self.max_body_bytes = max_body_bytes
        self.credentials = credentials
        self.inflight = inflight

    def _answer(self, result: str, response: Response) -> Response:
        self.metrics.export_answered(m.HTTP, result)
        return response

    def _refused(
        self, request: Request, content_type: str
    ) -> tuple[tuple[str, Response] | None, tuple[str, ...]]:
        """(result, answer) for a request without the token or of a type we do not read,
        None when it may be read; and the services its credential may send spans for
        (empty: any). The same for every OTLP path."""
        status, services = self.credentials.admit(request.headers.get("authorization"), INGEST)
        if status:
            answer = _status_response(
                status,
                code_pb2.UNAUTHENTICATED if status == 401 else code_pb2.PERMISSION_DENIED,
                refusal(status, INGEST),
                content_type,
                {"WWW-Authenticate": 'Bearer realm="handoffscope"'} if status == 401 else {},
            )
            return (m.UNAUTHORIZED, answer), services
        if content_type not in decode.CONTENT_TYPES:
            answer = _status_response(
                415,
                code_pb2.INVALID_ARGUMENT,
                f"Content-Type {content_type or '(none)'!r} is not supported; "
                f"send {decode.PROTOBUF} or {decode.JSON}",
                decode.JSON,
            )
            return (m.UNSUPPORTED, answer), services
        return None, services

    async def export(self, request: Request) -> Response:
        received_ns = time.time_ns()
        content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        refused, services = self._refused(request, content_type)
        if refused is not None:
            return self._answer(*refused)
        reservation = _Reservation(self.inflight)
        try:
            return await self._export(request, content_type, received_ns, reservation, services)
        except ClientDisconnect:
            # Counted by the connection (client_disconnect); nobody is left to answer.
            return Response(status_code=400)
        finally:
            reservation.release()

    async def _export(
        self,
        request: Request,
        content_type: str,
        received_ns: int,
        reservation: _Reservation,
        services: tuple[str, ...],
    ) -> Response:
        limit = self.max_body_bytes
        encoding = request.headers.get("content-encoding", "")
        try:
            declared = int(request.headers.get("content-length", "0") or 0)
            if declared > limit:
                raise decode.BodyTooLarge(
                    f"Content-Length {declared} exceeds {limit} bytes (--max-body-bytes)"
                )
            reservation.take(max(declared, 0))
            body = await _read_body(request, limit, reservation)
            if len(body) > OFF_LOOP_BYTES or encoding.strip() not in ("", "identity"):
                batch, committed = await asyncio.to_thread(
                    self._decode_and_accept, body, encoding, content_type, received_ns, services
                )
            else:
                batch, committed = self._decode_and_accept(
                    body, encoding, content_type, received_ns, services
                )
        except _NoBudget as exc:
            return self._busy(exc, content_type, {"Retry-After": str(RETRY_AFTER_S), **_CLOSE})
        except decode.BodyTooLarge as exc:
            return self._answer(
                m.TOO_LARGE,
                _status_response(
                    413, code_pb2.RESOURCE_EXHAUSTED, str(exc), content_type, dict(_CLOSE)
                ),
            )
        except decode.UnsupportedEncoding as exc:
            return self._answer(
                m.UNSUPPORTED,
                _status_response(415, code_pb2.INVALID_ARGUMENT, str(exc), content_type),
            )
        except (decode.DecodeError, ValueError) as exc:
            return self._answer(
                m.BAD_REQUEST,
                _status_response(400, code_pb2.INVALID_ARGUMENT, str(exc), content_type),
            )
        except QueueFull as exc:
            return self._busy(exc, content_type, {"Retry-After": str(retry_after_full())})
        except WriterClosed as exc:
            return self._unavailable(str(exc), content_type)
        if committed is not None:
            # Shielded: a client that gives up must not cancel the commit bookkeeping.
            try:
                await asyncio.wait_for(
                    asyncio.shield(asyncio.wrap_future(committed)), COMMIT_TIMEOUT_S
                )
            except Exception as exc:
                return self._unavailable(
                    f"spans not stored: {str(exc) or 'commit timed out'}", content_type
                )
        response = self.handler.response(batch)
        answer: bytes
        if content_type == decode.PROTOBUF:
            answer = response.SerializeToString()
        else:
            answer = json_format.MessageToJson(response, indent=None).encode()
        result = m.PARTIAL if batch.rejected else m.OK
        return self._answer(result, Response(answer, media_type=content_type))

    async def discard(self, request: Request) -> Response:
        """`POST /v1/logs`, `/v1/metrics`: read within the limits, answer an empty success
        in the request's encoding, keep nothing (see the module docstring)."""
        signal = DISCARDED_PATHS[request.url.path]
        content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        refused, _ = self._refused(request, content_type)
        if refused is not None:
            return refused[1]
        reservation = _Reservation(self.inflight)
        try:
            declared = int(request.headers.get("content-length", "0") or 0)
            if declared > self.max_body_bytes:
                raise decode.BodyTooLarge(
                    f"Content-Length {declared} exceeds {self.max_body_bytes} bytes "
                    "(--max-body-bytes)"
                )
            reservation.take(max(declared, 0))
            await _read_body(request, self.max_body_bytes, reservation)
        except (decode.BodyTooLarge, ValueError) as exc:
            return _status_response(
                413, code_pb2.RESOURCE_EXHAUSTED, str(exc), content_type, dict(_CLOSE)
            )
        except _NoBudget as exc:
            return _status_response(
                429,
                code_pb2.RESOURCE_EXHAUSTED,
                f"collector busy: {exc}; retry later",
                content_type,
                {"Retry-After": str(RETRY_AFTER_S), **_CLOSE},
            )
        except ClientDisconnect:
            return Response(status_code=400)
        finally:
            reservation.release()
        self.metrics.discarded(m.HTTP, signal)
        note_discarded(signal, m.HTTP)
        # An empty Export{Logs,Metrics}ServiceResponse: no partial_success, all accepted.
        body = b"" if content_type == decode.PROTOBUF else b"{}"
        return Response(body, media_type=content_type)

    def _decode_and_accept(
        self,
        body: bytearray,
        encoding: str,
        content_type: str,
        received_ns: int,
        services: tuple[str, ...],
    ) -> tuple[SpanBatch, Future | None]:
        """Inflate, decode, allowlist and queue (on the loop or in a worker thread);
        `services`: the sender's credential's scope (empty: any service)."""
        raw = decode.inflate(body, encoding, self.max_body_bytes)
        if content_type == decode.PROTOBUF:
            return self.handler.accept_protobuf(raw, received_ns, services)
        return self.handler.accept(decode.parse(raw, content_type), received_ns, services=services)

    def _busy(self, exc: Exception, content_type: str, headers: dict[str, str]) -> Response:
        """429: no budget for the body, or the write queue is full (`headers` say when to
        retry, and whether the connection closes)."""
        return self._answer(
            m.OVERLOADED,
            _status_response(
                429,
                code_pb2.RESOURCE_EXHAUSTED,
                f"collector busy: {exc}; retry later",
                content_type,
                headers,
            ),
        )

    def _unavailable(self, message: str, content_type: str) -> Response:
        return self._answer(
            m.UNAVAILABLE,
            _status_response(
                503,
                code_pb2.UNAVAILABLE,
                message,
                content_type,
                {"Retry-After": str(RETRY_AFTER_CLOSED_S)},
            ),
        )
