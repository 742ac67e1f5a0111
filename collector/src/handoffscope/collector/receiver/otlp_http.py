"""OTLP/HTTP receiver: `POST /v1/traces`, per the OTLP specification.

| request | answer |
|---|---|
| protobuf or JSON export, committed | 200, `ExportTraceServiceResponse` in the request's encoding; `partial_success {rejected_spans, error_message}` when spans were refused (the rest are stored) |
| body not decodable | 400 |
| missing / wrong bearer token (when HANDOFFSCOPE_TOKEN is set) | 401 |
| body over `--max-body-bytes` (by Content-Length, while reading, or once inflated) | 413 |
| Content-Type other than `application/x-protobuf` / `application/json`, or an unknown Content-Encoding | 415 |
| writer queue full | 429 with `Retry-After` |
| shutting down, or the commit failed | 503 with `Retry-After` |

Every 4xx/5xx body is a `google.rpc.Status` (protobuf for protobuf requests, JSON
otherwise) whose message says what is wrong. 429 and 503 are the codes OTLP exporters
retry; the rest they do not, which is right: re-sending a malformed body cannot help.
"""

from __future__ import annotations

import asyncio
import json
import time

from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from starlette.requests import Request
from starlette.responses import Response

from handoffscope.collector import metrics as m
from handoffscope.collector.auth import bearer_ok
from handoffscope.collector.receiver import decode
from handoffscope.collector.receiver.export import (
    COMMIT_TIMEOUT_S,
    RETRY_AFTER_CLOSED_S,
    ExportHandler,
    retry_after_full,
)
from handoffscope.collector.writer import QueueFull, WriterClosed

PATH = "/v1/traces"


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


async def _read_body(request: Request, limit: int) -> bytes:
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise decode.BodyTooLarge(f"body exceeds {limit} bytes (--max-body-bytes)")
        chunks.append(chunk)
    return b"".join(chunks)


class OTLPHTTPReceiver:
    """The `/v1/traces` endpoint (a Starlette endpoint: `receiver.export`)."""

    def __init__(self, handler: ExportHandler, *, max_body_bytes: int, token: str) -> None:
        self.handler = handler
        self.metrics = handler.metrics
        self.max_body_bytes = max_body_bytes
        self.token = token

    def _answer(self, result: str, response: Response) -> Response:
        self.metrics.export_answered(m.HTTP, result)
        return response

    async def export(self, request: Request) -> Response:
        received_ns = time.time_ns()
        content_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if not bearer_ok(request.headers.get("authorization"), self.token):
            return self._answer(
                m.UNAUTHORIZED,
                _status_response(
                    401,
                    code_pb2.UNAUTHENTICATED,
                    "missing or wrong bearer token (Authorization: Bearer <HANDOFFSCOPE_TOKEN>)",
                    content_type,
                    {"WWW-Authenticate": 'Bearer realm="handoffscope"'},
                ),
            )
        if content_type not in decode.CONTENT_TYPES:
            return self._answer(
                m.UNSUPPORTED,
                _status_response(
                    415,
                    code_pb2.INVALID_ARGUMENT,
                    f"Content-Type {content_type or '(none)'!r} is not supported; "
                    f"send {decode.PROTOBUF} or {decode.JSON}",
                    decode.JSON,
                ),
            )
        limit = self.max_body_bytes
        try:
            declared = int(request.headers.get("content-length", "0") or 0)
            if declared > limit:
                raise decode.BodyTooLarge(
                    f"Content-Length {declared} exceeds {limit} bytes (--max-body-bytes)"
                )
            body = await _read_body(request, limit)
            body = decode.inflate(body, request.headers.get("content-encoding", ""), limit)
            export = decode.parse(body, content_type)
        except decode.BodyTooLarge as exc:
            return self._answer(
                m.TOO_LARGE,
                _status_response(413, code_pb2.RESOURCE_EXHAUSTED, str(exc), content_type),
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

        try:
            batch, committed = self.handler.accept(export, received_ns)
        except QueueFull as exc:
            return self._answer(
                m.OVERLOADED,
                _status_response(
                    429,
                    code_pb2.RESOURCE_EXHAUSTED,
                    f"collector busy: {exc}; retry later",
                    content_type,
                    {"Retry-After": str(retry_after_full())},
                ),
            )
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
        if content_type == decode.PROTOBUF:
            body = response.SerializeToString()
        else:
            body = json_format.MessageToJson(response, indent=None).encode()
        result = m.PARTIAL if batch.rejected else m.OK
        return self._answer(result, Response(body, media_type=content_type))

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
