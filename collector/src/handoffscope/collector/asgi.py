"""The answer the collector's ASGI middlewares (`auth.BearerAuth`, `hosts.AllowedHosts`)
give a request they stop before it reaches the app: `{"error": ...}` as JSON, the same
shape the query API's errors have, so a client reads every refusal one way."""

from __future__ import annotations

import json
from collections.abc import Sequence


async def send_json_error(
    send, status: int, message: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Send `status` with body `{"error": message}` (and any extra `headers`)."""
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
