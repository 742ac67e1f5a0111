"""Start a benchmark's server in its own process and wait for its ready line.

The collector prints `handoffscope collector ready: http=http://HOST:PORT grpc=...` (and
bench_receiver's null receiver `null receiver ready: http=http://HOST:PORT`); with port 0
it picks free ports, so the line is the only place they can be learned.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path

READY = re.compile(r"ready: http=(http://[\d.]+:\d+)")


def start(cmd: list[str]) -> tuple[subprocess.Popen, str]:
    """Run `cmd`, wait for its ready line, keep its output drained; return (process, base URL)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        lines.append(line)
        match = READY.search(line)
        if match:
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, match[1]
    raise RuntimeError("server did not start:\n" + "".join(lines))


def start_collector(db: str | Path, *extra: str) -> tuple[subprocess.Popen, str]:
    """A real collector on free ports with its own DuckDB file; quiet logs."""
    return start(
        [sys.executable, "-m", "handoffscope.collector", "--db", str(db),
         "--http-port", "0", "--grpc-port", "0", "--log-level", "warning", *extra]
    )  # fmt: skip
