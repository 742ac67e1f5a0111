"""Host header check (`--allowed-hosts`): the HTTP port answers only names it is known by.

DNS rebinding: a page the operator opens at `http://evil.example` re-points that name to
127.0.0.1 and then reads `http://evil.example:4318/api/v1/runs` with the browser's
same-origin blessing — the request reaches the collector with `Host: evil.example`.
Answering only configured names (loopback ones by default) closes that; the port is still
reachable by every client that names it properly.

Starlette's `TrustedHostMiddleware` is not used: it splits the header at the first `:`,
so `[::1]:4318` becomes `[` and IPv6 loopback could never be allowed.
"""

from __future__ import annotations

from collections.abc import Iterable

from handoffscope.collector.asgi import send_json_error


def host_of(header: str) -> str:
    """The host part of a Host header, lower case, without port or trailing dot."""
    header = header.strip().lower()
    if header.startswith("["):
        host = header[1 : header.find("]")] if "]" in header else header[1:]
    elif header.count(":") == 1:
        host = header.split(":", 1)[0]
    else:
        host = header  # a bare IPv6 address, or no port
    return host.rstrip(".")


def host_allowed(header: str, allowed: Iterable[str]) -> bool:
    host = host_of(header)
    for name in allowed:
        if name == "*" or name == host:
            return True
        if name.startswith("*.") and host.endswith(name[1:]):
            return True
    return False


class AllowedHosts:
    """ASGI middleware: 400 for a request whose Host header is not allowed."""

    def __init__(self, app, allowed: Iterable[str]) -> None:
        self.app = app
        self.allowed = [h.strip().lower().strip("[]") for h in allowed]

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http":
            header = next((v for k, v in scope["headers"] if k == b"host"), b"")
            if not host_allowed(header.decode("latin-1"), self.allowed):
                await send_json_error(send, 400, "Host header not allowed (see --allowed-hosts)")
                return
        await self.app(scope, receive, send)
