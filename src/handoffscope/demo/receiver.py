"""The demo's webhook receiver: where the demo's collector sends its notifications.

`handoffscope demo` starts one on a free loopback port and passes it to the collector as
`--notify`, so the Approvals and Run detail pages show "owner notified …" for the demo's
waits, and the terminal reports what arrived. It checks the HMAC signature the way a real
receiver should (docs/alerts.md) and counts what it could not verify.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SIGNATURE_HEADER = "X-Handoffscope-Signature-256"


class DemoReceiver:
    def __init__(self, host: str, secret: str) -> None:
        self.secret = secret.encode()
        self.events: Counter[str] = Counter()
        self.unsigned = 0
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.receive(body, self.headers.get(SIGNATURE_HEADER, ""))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://{host}:{self.server.server_address[1]}/notify"

    def receive(self, body: bytes, signature: str) -> None:
        expected = "sha256=" + hmac.new(self.secret, body, hashlib.sha256).hexdigest()
        with self._lock:
            if not hmac.compare_digest(expected, signature):
                self.unsigned += 1
                return
            try:
                events = json.loads(body).get("events", [])
            except ValueError:
                self.unsigned += 1
                return
            self.events.update(str(e.get("event")) for e in events if isinstance(e, dict))

    def start(self) -> None:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def summary(self) -> str:
        with self._lock:
            total = sum(self.events.values())
            parts = ", ".join(f"{k} {n}" for k, n in sorted(self.events.items()))
        return f"{total} notifications received" + (f" ({parts})" if parts else "")

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
