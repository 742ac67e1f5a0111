"""One JSON request to a running collector's query API, for the command-line tools
(`handoffscope ack`, `handoffscope tokens`): standard library only, so they work wherever
the `handoffscope` command is installed, and every failure is one line of words.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

TIMEOUT_S = 10.0


class ApiRefused(Exception):
    """The collector answered 4xx/5xx: `status` and its one-line `reason`."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status}: {reason}")
        self.status = status
        self.reason = reason


class ApiUnreachable(Exception):
    """No answer (or not a URL): one line saying so."""


def one_line(text: str) -> str:
    return " ".join(text.split())[:300]


def call(
    api: str,
    path: str,
    method: str,
    token: str | None,
    *,
    query: dict[str, Any] | None = None,
    body: Any = None,
) -> tuple[int, Any]:
    """(status, decoded JSON or None) of `method api+path`; ApiRefused / ApiUnreachable."""
    base = api.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ApiUnreachable(f"--api: expected an http:// or https:// URL, got {api!r}")
    q = {k: v for k, v in (query or {}).items() if v is not None}
    url = base + path + ("?" + urllib.parse.urlencode(q) if q else "")
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:  # noqa: S310 (http(s) only, checked)
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        try:
            reason = json.loads(raw).get("error") or raw.decode(errors="replace")
        except (ValueError, AttributeError):
            reason = raw.decode(errors="replace").strip() or exc.reason
        raise ApiRefused(exc.code, one_line(str(reason))) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        why = getattr(exc, "reason", exc)
        raise ApiUnreachable(f"cannot reach the API at {base}: {one_line(str(why))}") from None
