"""Helpers shared by the demo scenario tests."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def poll(get: Callable[[], Any], until: Callable[[Any], bool], timeout: float = 20.0) -> Any:
    """Poll until `until` holds or `timeout` s pass; the caller's asserts say what is missing.

    Export is asynchronous and `approval_overdue` is judged at query time, so this waits
    for evidence; it asserts nothing about how long that took.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            last = get()
        except Exception as exc:  # 404 until the run's first span is stored
            last = {"error": repr(exc)}
        if ("handoffs" in last and until(last)) or time.monotonic() > deadline:
            return last
        time.sleep(0.1)
