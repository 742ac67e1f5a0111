"""`Lru`: the one bounded map both adapters keep their per-process memory in.

Everything an adapter remembers (runs, threads, open spans, units of work) is keyed by
ids the app or the framework invents, so it must be bounded: an app that never ends a
span, or runs a million threads, must not grow the process without limit. Forgetting the
least recently *stored* entry is right for all of them — a run, span or unit still in use
is stored again when it is used — so reading never reorders (`get` is the plain dict's)
and `put` is the only way in. A plain `dict` with manual eviction was written out five
times before this; `functools.lru_cache` caches calls, not state we update.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Lru(OrderedDict[K, V]):
    """An insertion-ordered dict holding at most `limit` entries (at least one)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = max(1, limit)

    def put(self, key: K, value: V) -> None:
        """Store `key` as the most recent entry, forgetting the oldest beyond `limit`."""
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)
