"""The one way tests wait for something asynchronous (export, judging, a page render)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def eventually(
    fetch: Callable[[], T],
    until: Callable[[T], bool] = bool,
    *,
    timeout: float = 60.0,
    every: float = 0.2,
    or_last: bool = False,
    what: str = "",
) -> T:
    """Call `fetch()` until `until(value)` holds and return that value.

    A bound on waiting, not a measurement: after `timeout` seconds it fails with the last
    value seen — or, with `or_last`, returns it, so the test's own assertions say what is
    missing. An exception from `fetch` (a 404 before the first span is stored) counts as
    "not yet", and is what is reported if nothing better came.
    """
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = fetch()
            if until(last):
                return last
        except Exception as exc:  # not there yet; the last error is the report
            if last is None or isinstance(last, Exception):
                last = exc
        if time.monotonic() > deadline:
            if or_last and not isinstance(last, Exception):
                return last
            label = f" ({what})" if what else ""
            raise AssertionError(f"still not there after {timeout} s{label}: {last!r}"[:4000])
        time.sleep(every)
