"""Bearer-token auth: on when HANDOFFSCOPE_TOKEN is set, for everything but /healthz.

Ingest (`/v1/traces`, gRPC `Export`), `/metrics` and the query API (`/api/v1/*` and its
OpenAPI pages) require `Authorization: Bearer <token>`; `/healthz` stays open so probes
need no secret. Tokens are compared in constant time. The OTLP/HTTP receiver checks for
itself (it answers with an OTLP Status body); `BearerAuth` guards every other path.
"""

from __future__ import annotations

import hmac

from handoffscope.collector.asgi import send_json_error

OPEN_PATHS = frozenset({"/healthz"})
SELF_CHECKED_PATHS = frozenset({"/v1/traces"})


def bearer_ok(header: str | None, token: str) -> bool:
    """Whether an Authorization header value carries `token` (always True without one)."""
    if not token:
        return True
    if not header:
        return False
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode(), token.encode())


class BearerAuth:
    """ASGI middleware: 401 `{"error": ...}` without the right bearer token."""

    def __init__(self, app, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope, receive, send) -> None:
        if (
            not self.token
            or scope["type"] != "http"
            or scope["path"] in OPEN_PATHS
            or scope["path"] in SELF_CHECKED_PATHS
        ):
            await self.app(scope, receive, send)
            return
        header = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                header = value.decode("latin-1")
                break
        if bearer_ok(header, self.token):
            await self.app(scope, receive, send)
            return
        await send_json_error(
            send,
            401,
            "missing or wrong bearer token (Authorization: Bearer <HANDOFFSCOPE_TOKEN>)",
            [(b"www-authenticate", b'Bearer realm="handoffscope"')],
        )
