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


def legs_of(authors: Sequence[str], destinations: Sequence[str | None]) -> list[int]:
    """Model calls per leg, from the driver's own account: `authors` are the agents whose
    models were called, in order; `destinations` the agents the run's handoffs gave control
    to, in run order. A call by the next handoff's destination opens that handoff's leg (the
    scenarios never hand control to the agent already holding it). Leg 0 is the run's first
    (before any handoff); leg i + 1 is the one handoff i gave."""
    counts = [0] * (len(destinations) + 1)
    leg = 0
    for author in authors:
        if leg < len(destinations) and author == destinations[leg]:
            leg += 1
        counts[leg] += 1
    return counts


def check_usage(
    run: Mapping[str, Any],
    authors: Sequence[str],
    per_call: tuple[int, int],
    model: str | None = None,
    legs: bool = True,
) -> None:
    """What the run's scripted models reported, as the collector summed it from the
    `handoff.usage` spans its translator derived (docs/semconv.md, "Usage"): every call
    reported `per_call` (input, output) tokens, so the run's usage is that times the calls
    the driver counted; with `legs`, each handoff's usage is the calls its destination made
    while it held control (`legs_of`), null for a leg with none. `model`: the run's model
    (the one with the most calls), when the source names it."""
    calls = len(authors)
    usage = run["usage"]
    assert usage is not None, run
    expected = (per_call[0] * calls, per_call[1] * calls, calls)
    got = (usage["input_tokens"], usage["output_tokens"], usage["model_calls"])
    assert got == expected, usage
    if model is not None:
        assert usage["model"] == model, usage
    if not legs:
        return
    destinations = [h["to_agent"] for h in run["handoffs"]]
    counts = legs_of(authors, destinations)
    for h, n in zip(run["handoffs"], counts[1:], strict=True):
        if n == 0:
            assert h["usage"] is None, h
            continue
        assert h["usage"] is not None, (h, counts)
        leg = (h["usage"]["input_tokens"], h["usage"]["output_tokens"], h["usage"]["model_calls"])
        assert leg == (per_call[0] * n, per_call[1] * n, n), (h, counts)
