"""Bytes of an OTLP trace export -> `ExportTraceServiceRequest`, and typed attribute reads.

- Protobuf (`application/x-protobuf`, and every gRPC Export) is parsed by
  `opentelemetry-proto` on protobuf's upb backend — or, for an export no translator
  claims, read once through `lean_trace.py`'s declaration of the same messages, which
  refuses exactly the bodies this parse refuses (`pipeline.ExportHandler.read_protobuf`).
- JSON (`application/json`) follows the OTLP/JSON mapping: lowerCamelCase keys, enums as
  integers, 64-bit integers as strings or numbers, and — unlike plain proto3 JSON — trace
  and span ids as HEX strings. The ids are turned into the base64 proto3 JSON expects and
  the document is parsed into the same message type, so both encodings reach the
  allowlist as one kind of object. A malformed id does not fail the whole export: it is
  left empty and the allowlist refuses that one span through `partial_success`.
- `gzip` (and `deflate`) bodies are inflated with a ceiling, so a small compressed body
  cannot expand past `--max-body-bytes` (a "zip bomb").

Attribute values are then read by the type the contract expects, in `values.py`.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib

from google.protobuf import json_format
from google.protobuf.message import DecodeError as _ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CONTENT_TYPES = (PROTOBUF, JSON)


class DecodeError(ValueError):
    """The payload is not an OTLP trace export; the message says what is wrong (HTTP 400)."""


class BodyTooLarge(ValueError):
    """The body, or what it inflates to, exceeds the configured limit (HTTP 413)."""


class UnsupportedEncoding(ValueError):
    """A Content-Encoding other than gzip, deflate or identity (HTTP 415)."""


def inflate(body: bytes | bytearray, encoding: str, limit: int) -> bytes | bytearray:
    """Undo `Content-Encoding`; raise BodyTooLarge past `limit` bytes of output."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding == "gzip":
        wbits = 16 + zlib.MAX_WBITS
    elif encoding == "deflate":
        wbits = zlib.MAX_WBITS
    else:
        raise UnsupportedEncoding(
            f"Content-Encoding {encoding!r} is not supported; use gzip, deflate or none"
        )
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise DecodeError(f"body is not valid {encoding}: {exc}") from None
    if len(out) > limit:
        raise BodyTooLarge(f"body inflates to more than {limit} bytes (--max-body-bytes)")
    if not inflater.eof:
        raise DecodeError(f"body is truncated {encoding}")
    return out


def parse_protobuf(body: bytes | bytearray) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(bytes(body) if isinstance(body, bytearray) else body)
    except _ProtobufDecodeError as exc:
        raise DecodeError(
            f"body is not a protobuf ExportTraceServiceRequest ({exc}); "
            f"send Content-Type {JSON} for OTLP/JSON"
        ) from None
    return request


_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids_to_base64(obj: dict) -> None:
    for field in _ID_FIELDS:
        value = obj.get(field)
        if isinstance(value, str) and value:
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                raw = b""  # refused later as "invalid trace/span id", the rest is kept
            obj[field] = base64.b64encode(raw).decode("ascii")


def parse_json(body: bytes | bytearray) -> ExportTraceServiceRequest:
    try:
        doc = json.loads(body)
    except RecursionError:
        # Nesting deeper than Python's recursion limit: refuse it (400), not a 500.
        raise DecodeError("body is nested too deeply to be an OTLP/JSON export") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise DecodeError(f"body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise DecodeError("OTLP/JSON body must be an object with `resourceSpans`")
    try:
        for resource_spans in doc.get("resourceSpans") or ():
            for scope_spans in resource_spans.get("scopeSpans") or ():
                for span in scope_spans.get("spans") or ():
                    _hex_ids_to_base64(span)
                    for link in span.get("links") or ():
                        _hex_ids_to_base64(link)
    except (AttributeError, TypeError):
        raise DecodeError(
            "OTLP/JSON shape is wrong: expected resourceSpans[].scopeSpans[].spans[] objects"
        ) from None
    request = ExportTraceServiceRequest()
    try:
        # Unknown fields are ignored, as the OTLP/JSON mapping requires of receivers.
        json_format.ParseDict(doc, request, ignore_unknown_fields=True)
    except (json_format.ParseError, binascii.Error, ValueError, TypeError) as exc:
        raise DecodeError(f"body is not OTLP/JSON: {exc}") from None
    except RecursionError:
        raise DecodeError("body is nested too deeply to be an OTLP/JSON export") from None
    return request


def parse(body: bytes | bytearray, content_type: str) -> ExportTraceServiceRequest:
    if content_type == PROTOBUF:
        return parse_protobuf(body)
    if content_type == JSON:
        return parse_json(body)
    raise AssertionError(f"unchecked content type {content_type!r}")
