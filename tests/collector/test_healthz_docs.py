"""docs/api.md's `/healthz` example is what a real collector answers: the same fields, and the
same `schema_version` and `store_version` as a fresh store (the example said 8 once the
store was at 9)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def documented_example() -> dict[str, Any]:
    doc = (ROOT / "docs" / "api.md").read_text()
    section = doc[doc.index("### `GET /healthz`") : doc.index("### `GET /metrics`")]
    (example,) = re.findall(r"`(\{.*?\})`", section, re.S)
    parsed: dict[str, Any] = json.loads(example)
    return parsed


def test_the_healthz_example_is_a_real_answer(collector: Any) -> None:
    served = collector.healthz()
    example = documented_example()
    assert sorted(example) == sorted(served)
    assert (example["schema_version"], example["store_version"]) == (
        served["schema_version"],
        served["store_version"],
    )
    assert example["status"] == served["status"] == "ok"
