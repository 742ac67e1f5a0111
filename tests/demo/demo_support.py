"""Helpers for the demo tests (imported by bare name, as tests/collector's ingest_support).

- `assert_priced(runs, model)`: every run of every demo kind says what it cost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def assert_priced(runs: Mapping[str, list[dict[str, Any]]], model: str) -> None:
    """Every run (`GET /api/v1/runs/{run_id}` answers, per demo kind) says what it cost:
    its model calls reported tokens under `model`, one the collector's price table knows,
    so the board shows dollars, not "not priced"."""
    for kind, details in runs.items():
        for r in details:
            usage = r["usage"]
            assert usage is not None and usage["model_calls"] >= 1, (kind, r["run_id"])
            assert usage["model"] == model and usage["input_tokens"] > 0, kind
            assert usage["cost_usd"] and not usage["unpriced_models"], (kind, usage)
