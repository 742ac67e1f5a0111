"""Bearer-token auth by credential kind (credentials.py; docs/security.md).

What each path needs: ingest (`/v1/traces`, gRPC `Export` — the OTLP receivers check for
themselves, answering with an OTLP Status body), admin (`/api/v1/tokens`, and the
acknowledgement writes), read (every other path: the query API, `/metrics`, the OpenAPI
pages). `/healthz` stays open so probes need no secret. `BearerAuth` guards every path the
receivers do not.
"""

from __future__ import annotations

from handoffscope.collector.asgi import send_json_error
from handoffscope.collector.credentials import ADMIN, READ, Credentials, refusal

OPEN_PATHS = frozenset({"/healthz"})
SELF_CHECKED_PATHS = frozenset({"/v1/traces"})
ADMIN_PATHS = ("/api/v1/tokens",)
ADMIN_WRITES = frozenset({"/api/v1/acknowledgements"})
"""Paths whose writes (POST, DELETE) take an admin credential; reading them takes read."""
CHALLENGE = [(b"www-authenticate", b'Bearer realm="handoffscope"')]


def need_of(path: str, method: str) -> str:
    """The credential kind a request needs (read or admin; the receivers check ingest)."""
    if path.startswith(ADMIN_PATHS):
        return ADMIN
    if path in ADMIN_WRITES and method not in ("GET", "HEAD"):
        return ADMIN
    return READ


class BearerAuth:
    """ASGI middleware: 401 / 403 `{"error": ...}` unless the token's kind may do it."""

    def __init__(self, app, credentials: Credentials) -> None:
        self.app = app
        self.credentials = credentials

    async def __call__(self, scope, receive, send) -> None:
        if (
            scope["type"] != "http"
            or not self.credentials.enabled
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
        need = need_of(scope["path"], scope.get("method", "GET"))
        status = self.credentials.check(header, need)
        if status == 0:
            await self.app(scope, receive, send)
            return
        await send_json_error(
            send, status, refusal(status, need), CHALLENGE if status == 401 else []
        )
