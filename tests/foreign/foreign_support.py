"""Helpers of the foreign-spans tests (fixtures are in conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from support.polling import eventually

HERE = Path(__file__).resolve().parent
APP_TIMEOUT_S = 240.0


def run_apps(commands: Mapping[str, Sequence[str]]) -> dict[str, dict[str, Any]]:
    """Run app scripts of this folder side by side; name -> the JSON line each printed.

    Side by side because each spends seconds importing its framework; the collector takes
    their exports concurrently as it would in production.
    """
    procs = {
        name: subprocess.Popen(
            [sys.executable, str(HERE / argv[0]), *argv[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, argv in commands.items()
    }
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=APP_TIMEOUT_S)
        assert proc.returncode == 0, f"{name} failed:\n{stderr[-4000:]}"
        out[name] = json.loads(stdout.strip().splitlines()[-1])
    return out


def refused_whole(collector: Any, scope: str) -> dict[str, Any]:
    """Check that every span of `scope` reached the collector and was refused, and that no
    other span was (an instrumentation no translator reads, running beside an adapter);
    returns the `/api/v1/sources` answer read."""
    rejected = collector.metric("handoffscope_spans_rejected_total")

    def row(listing: dict[str, Any]) -> dict[str, Any]:
        found = [s for s in listing["sources"] if s["scope"] == scope]
        return found[0] if found else {}

    # The per-source counts are stored behind the metrics: wait for them to catch up.
    listing = eventually(
        lambda: collector.api("/api/v1/sources"),
        lambda answer: row(answer).get("refused_spans") == rejected,
        or_last=True,
    )
    refused = row(listing)
    assert refused.get("status") == "refused", listing
    assert refused["refused_spans"] == refused["spans_received"] == rejected > 0, refused
    return listing
