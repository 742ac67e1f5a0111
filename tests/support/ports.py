"""A free loopback port, for a server a test starts itself (a collector picks its own)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port free on 127.0.0.1 a moment ago (the caller binds it soon after)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
