"""What the collector asks of an engine, whichever runs the judging.

Three classes judge handoffs: `HealthEngine` (in this process), `ShardedEngine`
(`engine/shards.py`, N in-process shards) and `ProcessEngine` (`engine/worker.py`,
the engine in a worker process). The judge (`engine/judge.py`,
`engine/leased_judge.py`) and the server drive all three through the same calls,
named here so mypy checks each class offers them:

- `install(con)` creates the engine's tables; `load(con)` reads its keys back;
- per commit, `prepare(con)` then `apply(con, new_spans)` inside the transaction
  that stored the spans, `rollback()` when that transaction fails; `apply` returns the
  runs whose turn facts moved, (before, after) (engine/turns.py, `refresh`, which the
  judge calls next in the same transaction);
- `retention(con, cutoff_ns)` drops what the store pruned;
- `release()` lets go of the loaded state when another collector takes the lease.

Starting and closing a worker (`start`, `close`) belong to the in-worker engines
only and are not part of this protocol.
"""

from __future__ import annotations

from typing import Any, Protocol


class Engine(Protocol):
    def install(self, con: Any) -> tuple[int, int]: ...

    def load(self, con: Any, *, now_ns: int | None = None) -> int: ...

    def prepare(self, con: Any) -> None: ...

    def apply(self, con: Any, new_spans: Any) -> list[tuple]: ...

    def rollback(self) -> None: ...

    def retention(self, con: Any, cutoff_ns: int) -> None: ...

    def release(self) -> None: ...
