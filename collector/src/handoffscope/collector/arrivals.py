"""Spans arriving over the last second: whether gathering work before a step is worth it.

The loader (`writer.py`) and the judge (`engine/judge.py`) each pay a fixed cost per step
— DuckDB's binding and planning per statement, a commit, a round of the engine's
statements — so while spans arrive fast, a step that waits a fraction of a second for
more spans costs far less per span than one that starts at once. A trickle gains nothing
from waiting (its fixed costs are few per second anyway) and would only be shown later,
so both wait only while this rate says spans are flowing.

Not thread-safe: its users call it under their own lock.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

WINDOW_S = 1.0


class RecentArrivals:
    """Spans added over the last WINDOW_S seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._added: deque[tuple[float, int]] = deque()
        self._total = 0

    def add(self, spans: int) -> None:
        self._added.append((self._clock(), spans))
        self._total += spans

    def per_second(self) -> int:
        """Spans added within the last WINDOW_S seconds."""
        horizon = self._clock() - WINDOW_S
        added = self._added
        while added and added[0][0] < horizon:
            self._total -= added.popleft()[1]
        return self._total
