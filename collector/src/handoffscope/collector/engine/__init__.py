"""The health engine: evidence spans in, a verdict for every handoff and run, stored.

The writer thread calls `HealthEngine.apply(con, new_spans)` inside the transaction that
inserted `new_spans` (already de-duplicated), so the derived rows commit atomically
with the spans they come from: a 200 to an exporter means the verdicts are stored too.

What it keeps (DDL in `store/sql/engine/ddl/`, applied as numbered steps under the
`engine_version` stamp of the `meta` table; the rows of the first three are the records
of `store/records.py`, and every statement is asked of `store/statements.py` by name):

- `handoffs`: one row per (run, handoff id): merged evidence, loop and completion flags,
  and a verdict *timeline* (see `evidence.py`), so the query API judges time-based
  verdicts against the time of the query with one macro, `hs_verdict_at`.
- `runs`: run facts (status, path, current holder, loop cycle, false completion,
  failure, pending approvals) and the run's verdict timeline.
- `waits`: open and expired waits, for the approvals view.
- `handoff_daily`: handoffs per day, service, edge and rejection reason (weekly review).
- `edge_hourly`, `edge_runs`: settled handoffs per hour, edge and verdict, and the newest
  runs per edge and hour (control-flow view over windows of up to 30 days).
- `services`: every service seen.
- `run_daily`: runs and their usage per day, service and verdict (weekly review's cost).

Usage (engine/usage.py) is placed in legs, summed and priced when a run is judged: each
handoff row carries its destination's leg, each run row the sum and its loop's share, and
the edge and run rollups sum them beside their counts with the same deltas.

The rollups are kept exact with +1/-1 deltas: each handoff in memory remembers the
bucket it was counted in, and a reloaded handoff recomputes it from its stored row.

Memory stays bounded: merged state is held only for recently active runs (an LRU
bounded by `max_hot_handoffs`). Evidence for a run that was evicted reloads it — its
stored rows and its spans, replayed through the same idempotent merge — before the new
spans are merged. To tell a brand-new run from an evicted one without asking the
database about every new id, the engine keeps the 64-bit keys of all stored runs in a
sorted numpy array (8 bytes per run: ~25 MB for the ~3M runs of ten million handoffs; a
Bloom filter would be smaller, but at a thousand new runs per batch even a 1% false
positive rate would make almost every batch pay for a lookup).

Rows are never updated in place: a changed row is deleted by its `row_seq` and the new
version appended, in one Arrow insert per table per batch (DuckDB appends fast; updates
and indexes would cost memory and insert speed).

If the transaction around `apply` fails, memory must go back to what was committed:
`rollback()` drops the runs that batch touched (they reload from the file when evidence
comes), and `load()` rebuilds everything; either is safe.
"""

from __future__ import annotations

import datetime as dt
import logging
import operator
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa

from handoffscope.instrumentation import semconv as sc
from handoffscope.instrumentation.verdicts import DEFAULT_GRACE_SECONDS, wait_missing
from handoffscope.instrumentation.verdicts.explain import rejection_bucket

from ..store import records, statements
from ..store.records import PARTITIONS, HandoffRecord, RunRecord, WaitRecord, run_key
from ..store.statements import Connection
from ..store.steps import apply_steps, ddl_dir, read_steps
from . import turns
from .evaluate import RunView, VerificationPolicy, evaluate_run
from .evidence import (
    WAIT_ATTRIBUTES,
    F,
    HandoffState,
    RunState,
    SpanColumns,
    merge_spans,
)
from .usage import Price, Usage, nano_usd, no_price

log = logging.getLogger(__name__)

ENGINE_VERSION_KEY = "engine_version"
NS_PER_DAY = 86_400 * 10**9
ALL_PARTS = frozenset(range(PARTITIONS))
"""Every partition (records.PARTITIONS): what an engine judges unless told a share."""
MAX_HOT_HANDOFFS = 20_000
"""The default bound on the handoffs (and runs) held in memory."""
FINISHED_SHARE = 0.2
"""Of that bound, what finished runs may hold (`_evict`). A finished run is rarely sent
more evidence (an outcome verified late, perhaps); an open one will be (its status, at
least). At ten million handoffs while ingesting 25k spans/s of whole runs, holding finished
runs to the whole bound cost the judge worker ≈ 40 MB of RSS and reloaded none of them
(bench/bench_queries.py): the bound was memory spent on runs that were done."""
APPLY_SLICE = 8192
"""Spans merged and written per step of `apply`."""

STR, I64, BOOL = pa.string(), pa.int64(), pa.bool_()
STRS = pa.list_(pa.string())

DAILY_SCHEMA = pa.schema(
    [
        ("day", pa.date32()),
        ("service", STR),
        ("from_agent", STR),
        ("to_agent", STR),
        ("reason", STR),
        ("handoffs", I64),
    ]
)


def _run_keys(con: Connection) -> np.ndarray:
    return statements.numpy(con, "engine/all_run_keys")["run_key"]


def daily_key(row: HandoffRecord) -> tuple | None:
    """(day, service, from, to, reason) of a handoff row: its weekly-review bucket.

    Rejections never depend on time (they precede every time-based rule), so the base
    verdict decides the reason and the bucket never goes stale. Delegations (an agent
    called as a tool) are not handoffs and stay out of the review (None).
    """
    if row.kind == sc.KIND_DELEGATION:
        return None
    reason = rejection_bucket(row.verdict, row.rejection_reason)
    return (
        row.first_seen_ns // NS_PER_DAY,
        row.service or "",
        row.from_agent or "",
        row.to_agent or "",
        reason,
    )


USAGE_SUMS = ("input_tokens", "output_tokens", "model_calls", "cost_nusd", "unpriced")
"""What the edge rollups sum of their handoffs' legs (engine step 23), in `edge_usage` order."""
EDGE_SCHEMA = pa.schema(
    [
        ("hour", I64),  # the daily upserts rename it to day
        ("service", STR),
        ("from_agent", STR),
        ("to_agent", STR),
        ("verdict", STR),
        ("undeclared", BOOL),
        ("handoffs", I64),
        *((name, I64) for name in USAGE_SUMS),
    ]
)
RUN_DAILY_SCHEMA = pa.schema(
    [
        ("day", I64),
        ("service", STR),
        ("verdict", STR),
        ("runs", I64),
        *((name, I64) for name in USAGE_SUMS),
        ("burned_tokens", I64),
        ("burned_cost_nusd", I64),
    ]
)
NO_USAGE = (0, 0, 0, 0, 0)


def usage_sums(
    input_tokens: int | None, output_tokens: int | None, calls: int | None, cost: float | None
) -> tuple[int, int, int, int, int]:
    """A leg's (or run's) figures as the rollups add them (`USAGE_SUMS`); unpriced is 1
    when it reported usage but has no price."""
    reported = input_tokens is not None or output_tokens is not None or calls is not None
    return (
        input_tokens or 0,
        output_tokens or 0,
        calls or 0,
        nano_usd(cost),
        int(reported and cost is None),
    )


def edge_usage(row: HandoffRecord) -> tuple[int, ...]:
    """What a handoff row adds to its edge's usage sums."""
    return usage_sums(row.input_tokens, row.output_tokens, row.model_calls, row.cost_usd)


def run_daily_key(row: RunRecord) -> tuple:
    """(day, service, verdict) of a run row: its `run_daily` bucket, under the verdict its
    timeline ends in (as `edge_key`)."""
    return (row.first_seen_ns // NS_PER_DAY, row.service or "", final_verdict(row))


def run_daily_sums(row: RunRecord) -> tuple[int, ...]:
    """What a run row adds to its `run_daily` bucket, after `runs` (1)."""
    burned_tokens = (row.burned_input_tokens or 0) + (row.burned_output_tokens or 0)
    return (
        1,
        *usage_sums(row.input_tokens, row.output_tokens, row.model_calls, row.cost_usd),
        burned_tokens,
        nano_usd(row.burned_cost_usd),
    )


def _shift(sums: dict[tuple, list[int]], key: tuple, by: Sequence[int], sign: int) -> None:
    if by == NO_USAGE:  # most handoffs report no usage: nothing to add
        return
    cur = sums.get(key)
    if cur is None:
        cur = sums[key] = [0] * len(by)
    for i, v in enumerate(by):
        cur[i] += sign * v


EDGE_RUNS_SCHEMA = pa.schema(
    [("hour", I64), ("service", STR), ("from_agent", STR), ("to_agent", STR), ("runs", STRS)]
)
NS_PER_HOUR = 3600 * 10**9
EDGE_RUNS_KEPT = 20


def edge_key(row: HandoffRecord) -> tuple | None:
    """(hour, service, from, to, verdict, undeclared) of a handoff row, under the verdict
    its timeline ends in (engine step 21): a handoff whose verdict still depends on time
    is counted already as what it will be, and the queries correct the few whose last
    flip is still ahead of them (edges.sql, health_handoffs.sql). None for delegations,
    which the edges query reads live and draws apart."""
    if row.kind == sc.KIND_DELEGATION:
        return None
    return (
        row.first_seen_ns // NS_PER_HOUR,
        row.service or "",
        row.from_agent or "",
        row.to_agent or "",
        final_verdict(row),
        row.route_declared is False,
    )


def final_verdict(row: HandoffRecord | RunRecord) -> str:
    """The verdict a row's timeline ends in: its last flip's, or its verdict."""
    if row.flip2_ns is not None:
        return row.flip2_verdict  # type: ignore[return-value]
    if row.flip1_ns is not None:
        return row.flip1_verdict  # type: ignore[return-value]
    return row.verdict


class KeySet:
    """Exact membership of 64-bit run keys: a sorted numpy array plus recent additions.

    Sorted with `np.sort` and merged by insertion, never with `np.unique`/`np.union1d`:
    numpy 2.4's `unique` took 3.6-4.0 s on the 3.1M keys of a ten-million-handoff history
    (`np.sort` 48 ms), so each fold of FOLD_AT new runs stalled the judge for seconds and
    held ≈ 70 MB of temporaries (the worker's RSS went up by 200 MB in that step); the
    merge below takes ≈ 25 ms and one array's worth."""

    FOLD_AT = 65_536

    def __init__(self) -> None:
        self._sorted = np.empty(0, dtype=np.int64)
        self._recent: set[int] = set()

    def reset(self, keys: np.ndarray) -> None:
        self._sorted = _sorted_distinct(np.asarray(keys, dtype=np.int64))
        self._recent = set()

    def add(self, key: int) -> None:
        self._recent.add(key)
        if len(self._recent) >= self.FOLD_AT:
            self._fold()

    def _fold(self) -> None:
        added = _sorted_distinct(np.fromiter(self._recent, dtype=np.int64, count=len(self._recent)))
        self._recent.clear()
        held = self._sorted
        at = np.searchsorted(held, added)
        if len(held):
            new = held[at.clip(0, len(held) - 1)] != added
            added, at = added[new], at[new]
        self._sorted = np.insert(held, at, added)

    def contains(self, keys: Sequence[int]) -> list[bool]:
        if not keys:
            return []
        arr = np.asarray(keys, dtype=np.int64)
        hits = np.zeros(len(arr), dtype=bool)
        if len(self._sorted):
            idx = np.searchsorted(self._sorted, arr).clip(0, len(self._sorted) - 1)
            hits = self._sorted[idx] == arr
        recent = self._recent
        return [bool(h) or k in recent for h, k in zip(hits.tolist(), keys, strict=True)]

    def __len__(self) -> int:
        return len(self._sorted) + len(self._recent)

    @property
    def nbytes(self) -> int:
        return int(self._sorted.nbytes) + 64 * len(self._recent)


def _sorted_distinct(keys: np.ndarray) -> np.ndarray:
    """`keys` sorted, each once (what `np.unique` returns, without its cost: KeySet)."""
    if len(keys) < 2:
        return keys.copy()
    ordered = np.sort(keys)
    first = np.empty(len(ordered), dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


class _Writes:
    """Row changes collected over one batch, flushed with one statement per table."""

    def __init__(self) -> None:
        # New row versions (records) with their row_seqs, and the row_seqs they replace.
        self.handoffs: list[HandoffRecord] = []
        self.handoff_seqs: list[int] = []
        self.handoffs_doomed: list[int] = []
        self.runs: list[RunRecord] = []
        self.run_seqs: list[int] = []
        self.runs_doomed: list[int] = []
        self.waits: list[WaitRecord] = []
        self.wait_seqs: list[int] = []
        self.waits_doomed: list[int] = []
        self.daily: Counter[tuple] = Counter()
        self.edges: Counter[tuple] = Counter()
        self.edge_usage: dict[tuple, list[int]] = {}
        """Per edge key, the `USAGE_SUMS` deltas."""
        self.run_daily: dict[tuple, list[int]] = {}
        """Per `run_daily_key`, the deltas of runs and their sums (`run_daily_sums`)."""
        self.edge_runs: defaultdict[tuple, list[tuple[int, str]]] = defaultdict(list)
        self.services: set[str] = set()
        self.service_outcomes: dict[str, int] = {}

    def absorb(self, other: _Writes) -> None:
        """Add `other`'s rollup deltas to these (its rows are written already)."""
        self.daily.update(other.daily)
        self.edges.update(other.edges)
        for table, more in ((self.edge_usage, other.edge_usage), (self.run_daily, other.run_daily)):
            for key, by in more.items():
                _shift(table, key, by, 1)
        for key, runs in other.edge_runs.items():
            self.edge_runs[key].extend(runs)
        self.services |= other.services
        self.service_outcomes.update(other.service_outcomes)


class HealthEngine:
    """Merges evidence per handoff and run, classifies it, keeps the derived tables."""

    STATS = (
        "spans_applied",
        "runs_reloaded",
        "runs_evicted",
        "handoff_rows_written",
        "run_rows_written",
        "handoff_spans_over_cap",
    )
    """The names of `stats`."""

    def __init__(
        self,
        grace_seconds: float = DEFAULT_GRACE_SECONDS,
        retention_days: float = 30.0,
        *,
        max_hot_handoffs: int = MAX_HOT_HANDOFFS,
        reload_window_seconds: float = 3600.0,
        require_outcome: Iterable[str] = (),
        max_handoffs_per_run: int = 10_000,
        parts: Iterable[int] | None = None,
        price: Price = no_price,
    ) -> None:
        self.grace_seconds = float(grace_seconds)
        self.price = price
        """Prices a usage report when its run is judged (prices.PriceBook.cost; none: None)."""
        self.parts = ALL_PARTS if parts is None else frozenset(parts)
        """The partitions whose runs this engine judges (None: all; a worker of
        `--judge-workers`, or a collector holding some on a shared store: its share)."""
        if not self.parts or not self.parts <= ALL_PARTS:
            raise ValueError(f"parts {sorted(self.parts)!r}: want some of 0..{PARTITIONS - 1}")
        self.shard, self.shards = min(self.parts), PARTITIONS
        """Rows are numbered in the residue class of the engine's first partition, mod the
        partition count: engines judging disjoint partitions never number two rows alike."""
        self.policy = VerificationPolicy(require_outcome)
        """Which completed runs must be verified (collector flag, run flag, service history)."""
        self.retention_days = retention_days
        self.max_hot_handoffs = max_hot_handoffs
        """Bound on in-memory state, in handoffs (a run counts one more). About 2.3 kB
        each (the worker's RSS at 10M handoffs, 2026-12-06), so the default holds ≈ 46 MB;
        finished runs hold at most FINISHED_SHARE of it."""
        self.reload_window_seconds = reload_window_seconds
        self.max_handoffs_per_run = max_handoffs_per_run
        """Handoffs judged per run (0: no cap; `--max-handoffs-per-run`). Judging a run costs
        time and memory in its handoffs, so the cap is what bounds a run that never ends;
        evidence beyond it is refused, counted and the run marked `handoffs_capped`."""
        """`load` brings back runs that received evidence this recently."""
        self.runs: OrderedDict[str, RunState] = OrderedDict()
        """Every run in memory, least recently touched first."""
        self._finished: OrderedDict[str, int] = OrderedDict()
        """Of those, the runs whose latest status is terminal, least recently touched first,
        with their size when filed: evicted before any open run (`_evict`)."""
        self._finished_size = 0
        """The sizes in `_finished`, summed: at most FINISHED_SHARE of the bound."""
        self.hot_size = 0
        self.keys = KeySet()
        self.services: set[str] = set()
        self._seq = dict.fromkeys(("handoffs", "runs", "waits"), self.shard)
        self._last_touched: set[str] = set()
        self._batch_outcomes: dict[str, int] = {}
        self._pending = _Writes()
        self._turns_moved: list[tuple] = []
        """Runs whose turn facts moved since the last `apply` returned them (a `load` that
        rewrote rows leaves its own for the next `apply`)."""
        # Every key exists from the start: /metrics copies this dict from another thread,
        # and a dict that gains a key while being copied raises.
        self.stats = Counter[str](dict.fromkeys(self.STATS, 0))
        """Counters for /metrics (`handoffscope_engine_<name>_total`)."""

    # --- lifecycle ----------------------------------------------------------------------

    def install(self, con: Connection) -> tuple[int, int]:
        """Create or upgrade the engine's tables (own numbered steps, own version stamp)."""
        steps = read_steps(ddl_dir("engine", statements.dialect(con)))
        return apply_steps(
            con, steps, ENGINE_VERSION_KEY, what="health engine", then=turns.rebuild_if_asked
        )

    def load(self, con: Connection, *, now_ns: int | None = None) -> int:
        """Rebuild memory after a restart; return how many runs were reloaded.

        Restores the row counters, the set of stored run keys and services, and the
        state of runs active within `reload_window_seconds` (newest first, up to the
        memory bound). Reloaded runs are re-evaluated and any row that differs — say
        `--grace-seconds` changed — is rewritten.
        """
        self.runs.clear()
        self._finished.clear()
        self._finished_size = 0
        self.hot_size = 0
        self._pending = _Writes()
        h, r, w = statements.rows(con, "engine/max_row_seqs")[0]
        # Row numbers are this shard's residue mod the shard count, above every stored
        # one, so the engines of several shards never number two rows alike.
        self._seq = {t: self._aligned(int(v)) for t, v in zip(self._seq, (h, r, w), strict=True)}
        self.keys.reset(self._mine(_run_keys(con)))
        services = statements.arrow(con, "engine/all_services")
        self.services = set(services.column("service").to_pylist())
        self.policy.first_outcome = {
            svc: t
            for svc, t in zip(
                services.column("service").to_pylist(),
                services.column("first_outcome_ns").to_pylist(),
                strict=True,
            )
            if t is not None
        }
        now = time.time_ns() if now_ns is None else now_ns
        recent = statements.arrow(
            con,
            "engine/recent_runs",
            {
                "since": now - int(self.reload_window_seconds * 1e9),
                "limit": self.max_hot_handoffs,
            },
        )
        ids = [
            rid
            for rid, key in zip(
                recent.column("run_id").to_pylist(),
                recent.column("run_key").to_pylist(),
                strict=True,
            )
            if key % PARTITIONS in self.parts
        ]
        if ids:
            self._reload(con, ids)
            self._flush(con, self._evaluate(ids))
            for rid in ids:
                self.runs.move_to_end(rid, last=False)  # oldest first for eviction
            self._sort(ids, last=False)  # the same order: oldest first
            self._evict(keep=())
        log.info(
            "health engine loaded: %d stored runs, %d reloaded into memory",
            len(self.keys),
            len(ids),
        )
        return len(ids)

    def repart(self, parts: Iterable[int]) -> None:
        """Judge `parts` from now on; `load` must follow (the memory is of the old share)."""
        self.parts = frozenset(parts)
        if not self.parts or not self.parts <= ALL_PARTS:
            raise ValueError(f"parts {sorted(self.parts)!r}: want some of 0..{PARTITIONS - 1}")
        self.shard = min(self.parts)
        self.runs.clear()
        self._finished.clear()
        self._finished_size = 0
        self.hot_size = 0

    def _aligned(self, stored_max: int) -> int:
        """The counter to number rows from: `_next` steps by the shard count from here."""
        return stored_max - stored_max % self.shards + self.shard

    def _mine(self, keys: np.ndarray) -> np.ndarray:
        """The run keys of this engine's partitions."""
        if self.parts == ALL_PARTS:
            return keys
        return keys[np.isin(np.mod(keys, PARTITIONS), sorted(self.parts))]

    def prepare(self, con: Connection) -> None:
        """Ready to apply (the judge's first act). Nothing to do here: whoever opened the
        store called `load`; the worker's engine loads lazily, there (engine/worker.py)."""

    def apply(
        self, con: Connection, new_spans: pa.Table, outcomes: dict[str, int] | None = None
    ) -> list[tuple]:
        """Merge newly stored spans, re-judge what they touch, write changed rows; return
        the runs whose turn facts moved, as (before, after) `turns.facts` (the judge hands
        them to `turns.refresh` once every shard has applied: a conversation's runs may
        be any shard's).

        Call inside the transaction that inserted `new_spans`. Idempotent: applying a
        span twice changes nothing. `outcomes` (sharded engines): the earliest outcome
        start per service of the whole batch, of which `new_spans` is this shard's part —
        whether a completed run must be verified depends on every run of its service.
        """
        self._last_touched = set()
        self._batch_outcomes = outcomes or {}
        # In slices: a group commit may carry 32k spans, and the Python objects of a
        # slice (columns, states touched, rows to write) are what bounds this call's
        # memory. Merging is idempotent and order-free, so slicing changes no result.
        # A shard with no spans in the batch still learns its outcomes (one empty slice).
        # The rollups' deltas are few (one per bucket, not per row) and each upsert costs
        # about the same for few rows as for many: they are added up over the slices and
        # written once (six upserts a slice were ≈ 2.5 µs a span of the judge's time).
        last = new_spans.num_rows or (1 if self._batch_outcomes else 0)
        rollups = _Writes()
        for lo in range(0, last, APPLY_SLICE):
            self._apply(con, new_spans.slice(lo, APPLY_SLICE), rollups)
        self._flush_rollups(con, rollups)
        moved, self._turns_moved = self._turns_moved, []
        return moved

    def _apply(self, con: Connection, new_spans: pa.Table, rollups: _Writes) -> None:
        spans = SpanColumns.from_arrow(new_spans)
        batch_runs = {r for r in spans.run_id if r}
        self._last_touched |= batch_runs
        unknown = [r for r in batch_runs if r not in self.runs]
        if unknown:
            keys = [run_key(r) for r in unknown]
            stored = [r for r, hit in zip(unknown, self.keys.contains(keys), strict=True) if hit]
            if stored:
                self._reload(con, stored)
            for rid, key in zip(unknown, keys, strict=True):
                if rid not in self.runs:
                    self.runs[rid] = RunState(rid, key)
                    self.keys.add(key)
                    self.hot_size += 1
        before = sum(self.runs[r].size for r in batch_runs)
        outcomes: dict[str, int] = {}
        touched = merge_spans(self.runs, spans, outcomes, max_handoffs=self.max_handoffs_per_run)
        for rid in batch_runs:
            run = self.runs[rid]
            if run.refused_spans:
                self.stats["handoff_spans_over_cap"] += run.refused_spans
                run.refused_spans = 0
        self.hot_size += sum(self.runs[r].size for r in batch_runs) - before
        for svc, t in self._batch_outcomes.items():
            outcomes[svc] = t if svc not in outcomes else min(t, outcomes[svc])
        moved = self.policy.learn(outcomes)
        if moved:
            # A service's first outcome moved earlier: its runs that ended since are now
            # expected to be verified. Re-judge those in memory (older ones were judged
            # when no verifier of that service had reported yet).
            self._pending.service_outcomes.update({s: self.policy.first_outcome[s] for s in moved})
            touched |= {
                rid
                for rid, run in self.runs.items()
                if run.service is not None and run.service[-1] in moved
            }
        w = self._evaluate(touched)
        self._flush_rows(con, w)
        rollups.absorb(w)
        for rid in touched:
            self.runs.move_to_end(rid)
        self._sort(touched)
        self._evict(keep=batch_runs)
        self.stats["spans_applied"] += new_spans.num_rows

    def release(self) -> None:
        """Its memory is not wanted until the next `load` (the collector lost the judge
        lease). Nothing to stop in this process: whoever drops the engine frees it."""

    def rollback(self) -> None:
        """The transaction of the last `apply` failed: forget what it touched."""
        for rid in self._last_touched:
            self._drop(rid)
        self._pending = _Writes()
        self._turns_moved = []

    def retention(self, con: Connection, cutoff_ns: int) -> None:
        """Delete derived rows of runs whose last evidence ended before `cutoff_ns`."""
        if 0 in self.parts:  # the rows of every partition: deleted once, by partition 0's
            params = {"cutoff": cutoff_ns}
            # The runs' declared entry agents leave turn_entries before the runs do
            # (engine/turns.py: the judge tells their conversations again after).
            for name in ("expire_handoffs", "expire_waits", "expire_turn_entries", "expire_runs"):
                statements.run(con, f"engine/{name}", params)
            statements.run(con, "engine/expire_daily", {"cutoff_day": _day(cutoff_ns)})
            for name in ("expire_edges", "expire_edge_runs"):
                statements.run(con, f"engine/{name}", {"cutoff_hour": cutoff_ns // NS_PER_HOUR})
            for name in ("expire_edge_daily", "expire_edge_runs_daily", "expire_run_daily"):
                statements.run(con, f"engine/{name}", {"cutoff_day": cutoff_ns // NS_PER_DAY})
        for rid in [r for r, s in self.runs.items() if (s.last_seen_ns or 0) < cutoff_ns]:
            self._drop(rid)
        self.keys.reset(self._mine(_run_keys(con)))

    # --- memory ---------------------------------------------------------------------------

    def _drop(self, rid: str) -> None:
        self._finished_size -= self._finished.pop(rid, 0)
        run = self.runs.pop(rid, None)
        if run is not None:
            self.hot_size -= run.size

    def _sort(self, run_ids: Iterable[str], last: bool = True) -> None:
        """File the runs just judged as finished (most recently touched: `last`) or open."""
        for rid in run_ids:
            run = self.runs[rid]
            self._finished_size -= self._finished.pop(rid, 0)
            if run.finished:
                self._finished[rid] = size = run.size
                self._finished_size += size
                if not last:
                    self._finished.move_to_end(rid, last=False)

    def _evict(self, keep: Iterable[str]) -> None:
        """Down to the bound: finished runs first, then open ones, each least recently
        touched first; this step's open runs (`keep`, the newest) stay even over it.
        Finished runs also go beyond their share of the bound (FINISHED_SHARE), however
        little the open ones hold.

        Finished first: an open run will send more spans (its status, at least), a
        finished one perhaps an outcome. With plain LRU a finished run held its place as
        long as an open one, and when runs live longer than memory holds them, every open
        run was let go just before its next spans came and reloaded from the store then
        (at 12.5k spans/s of runs whose spans come over 10 s, 120,000 hot handoffs still
        reloaded 100,894 runs a minute; now 80,000 reload none: bench_judge_throughput.py
        --spread)."""
        keep = set(keep)
        share = self.max_hot_handoffs * FINISHED_SHARE
        while self._finished_size > share:
            self._drop(next(iter(self._finished)))
            self.stats["runs_evicted"] += 1
        while self.hot_size > self.max_hot_handoffs and self.runs:
            if self._finished:
                rid = next(iter(self._finished))
            else:
                rid = next(iter(self.runs))
                if rid in keep:
                    break  # only this step's open runs are left; they stay
            self._drop(rid)
            self.stats["runs_evicted"] += 1

    def _reload(self, con: Connection, run_ids: list[str]) -> None:
        """Bring stored runs back into memory: their rows, then their spans replayed."""
        lookup = pa.table(
            {
                "run_id": pa.array(run_ids, STR),
                "run_key": pa.array([run_key(r) for r in run_ids], I64),
            }
        )
        with statements.registered(con, {"hs_lookup": lookup}):
            stored_runs = statements.arrow(con, "engine/find_runs")
        if stored_runs.num_rows == 0:
            return
        runs: dict[str, RunState] = {}
        for row_seq, run_row in zip(
            stored_runs.column("row_seq").to_pylist(),
            records.read(RunRecord, stored_runs),
            strict=True,
        ):
            run = RunState(run_row.run_id, run_row.run_key)
            run.row_hash, run.row_seq = hash(run_row), row_seq
            run.daily_key, run.daily_usage = run_daily_key(run_row), run_daily_sums(run_row)
            run.turn = turns.facts(run_row)
            run.capped = bool(run_row.handoffs_capped)
            runs[run.run_id] = run
        found = pa.table(
            {
                "run_id": pa.array(list(runs), STR),
                "run_key": pa.array([r.key for r in runs.values()], I64),
            }
        )
        seen = {
            "lo": min(stored_runs.column("first_seen_ns").to_pylist()),
            "hi": max(stored_runs.column("last_seen_ns").to_pylist()),
        }
        received = [
            v
            for c in ("min_received_ns", "max_received_ns")
            for v in stored_runs.column(c).to_pylist()
            if v is not None
        ]
        with statements.registered(con, {"hs_reload": found}):
            h_table = statements.arrow(con, "engine/reload_handoffs", seen)
            w_table = statements.arrow(con, "engine/reload_waits")
            spans = (
                statements.arrow(
                    con, "engine/reload_spans", {"lo": min(received), "hi": max(received)}
                )
                if received
                else None
            )
        if spans is not None and spans.num_rows:
            # A capped run admits again exactly the handoffs its rows hold (the replay's
            # order need not be the order the evidence first came in).
            capped = {r.run_id for r in runs.values() if r.capped}
            admitted: dict[str, set[str]] = {r: set() for r in capped}
            if capped:
                for rid, hid in zip(
                    h_table.column("run_id").to_pylist(),
                    h_table.column("handoff_id").to_pylist(),
                    strict=True,
                ):
                    if rid in admitted:
                        admitted[rid].add(hid)
            merge_spans(
                runs,
                SpanColumns.from_arrow(spans),
                max_handoffs=self.max_handoffs_per_run,
                admitted=admitted,
            )
            for run in runs.values():
                run.refused_spans = 0  # counted when they first came
        pending = self._pending
        for row_seq, row in zip(
            h_table.column("row_seq").to_pylist(), records.read(HandoffRecord, h_table), strict=True
        ):
            h = runs[row.run_id].handoffs.get(row.handoff_id)
            if h is None:
                # Its spans are gone (retention cut through a long run): the row has no
                # evidence left to be re-judged from, so it goes too.
                pending.handoffs_doomed.append(row_seq)
                dk = daily_key(row)
                if dk is not None:
                    pending.daily[dk] -= 1
                ek = edge_key(row)
                if ek is not None:
                    pending.edges[ek] -= 1
                    _shift(pending.edge_usage, ek, edge_usage(row), -1)
                continue
            h.row_hash, h.row_seq = hash(row), row_seq
            h.daily_key, h.edge_key = daily_key(row), edge_key(row)
            h.edge_usage = edge_usage(row) if h.edge_key is not None else None
        for row_seq, wait_row in zip(
            w_table.column("row_seq").to_pylist(), records.read(WaitRecord, w_table), strict=True
        ):
            h = runs[wait_row.run_id].waits.get((wait_row.handoff_id, wait_row.resume_token_id))
            if h is None:
                pending.waits_doomed.append(row_seq)
                continue
            h.wait_hash, h.wait_row_seq = hash(wait_row), row_seq
        for rid, run in runs.items():
            self.runs[rid] = run
            self.hot_size += run.size
        self.stats["runs_reloaded"] += len(runs)

    # --- judging and writing ------------------------------------------------------------

    def _evaluate(self, run_ids: Iterable[str]) -> _Writes:
        w = self._pending
        self._pending = _Writes()
        for rid in run_ids:
            run = self.runs[rid]
            view = evaluate_run(run, self.grace_seconds, self.policy, self.price)
            service = view.service
            if service is not None and service not in self.services:
                w.services.add(service)
            for hv in view.handoffs:
                if hv.evidence is None:
                    continue  # judged in the same context before: its rows stand
                self._handoff(w, run, service, hv.state, hv.seq, hv.evidence)
            for wv in view.waits:
                self._wait(w, run, service, wv.state, wv.evidence)
            row = _run_row(run, service, view)
            digest = hash(row)
            if digest != run.row_hash:
                if run.row_seq is not None:
                    w.runs_doomed.append(run.row_seq)
                run.row_hash, run.row_seq = digest, self._next("runs")
                w.runs.append(row)
                w.run_seqs.append(run.row_seq)
                turn = turns.facts(row)
                if turn != run.turn:
                    if turns.told(turn) or turns.told(run.turn):
                        self._turns_moved.append((run.turn, turn))
                    run.turn = turn
                key, sums = run_daily_key(row), run_daily_sums(row)
                if key != run.daily_key or sums != run.daily_usage:
                    if run.daily_key is not None:
                        _shift(w.run_daily, run.daily_key, run.daily_usage, -1)  # type: ignore[arg-type]
                    _shift(w.run_daily, key, sums, 1)
                    run.daily_key, run.daily_usage = key, sums
        return w

    def _handoff(self, w: _Writes, run: RunState, service, h: HandoffState, seq: int, ev) -> None:
        row = _handoff_row(run, service, h, seq, ev)
        digest = hash(row)
        if digest == h.row_hash:
            return
        if h.row_seq is not None:
            w.handoffs_doomed.append(h.row_seq)
        else:  # first seen: one more run behind this edge in this hour
            hour = h.first_seen_ns // NS_PER_HOUR  # type: ignore[operator]
            w.edge_runs[(hour, service or "", ev.from_agent or "", ev.to_agent or "")].append(
                (h.first_seen_ns or 0, run.run_id)
            )
        h.row_hash, h.row_seq = digest, self._next("handoffs")
        w.handoffs.append(row)
        w.handoff_seqs.append(h.row_seq)
        key = daily_key(row)
        if key != h.daily_key:
            if h.daily_key is not None:
                w.daily[h.daily_key] -= 1
            if key is not None:
                w.daily[key] += 1
            h.daily_key = key
        ekey = edge_key(row)
        sums = edge_usage(row) if ekey is not None else None
        if ekey != h.edge_key or sums != h.edge_usage:
            if h.edge_key is not None:
                w.edges[h.edge_key] -= 1
                _shift(w.edge_usage, h.edge_key, h.edge_usage or NO_USAGE, -1)
            if ekey is not None:
                w.edges[ekey] += 1
                _shift(w.edge_usage, ekey, sums or NO_USAGE, 1)
            h.edge_key, h.edge_usage = ekey, sums

    def _wait(self, w: _Writes, run: RunState, service, h: HandoffState, ev) -> None:
        tl = h.wait_timeline
        row = None
        if tl is not None:
            row = _wait_row(run, service, h, ev, tl)
        digest = None if row is None else hash(row)
        if digest == h.wait_hash:
            return
        if h.wait_row_seq is not None:
            w.waits_doomed.append(h.wait_row_seq)
        h.wait_hash, h.wait_row_seq = digest, None
        if row is not None:
            h.wait_row_seq = self._next("waits")
            w.waits.append(row)
            w.wait_seqs.append(h.wait_row_seq)

    def _next(self, table: str) -> int:
        self._seq[table] += self.shards
        return self._seq[table]

    def _flush(self, con: Connection, w: _Writes) -> None:
        self._flush_rows(con, w)
        self._flush_rollups(con, w)

    def _flush_rows(self, con: Connection, w: _Writes) -> None:
        """Write the new row versions of `w` and delete those they replace."""
        tables: tuple[tuple[str, type, list[int], list[int], Sequence[tuple]], ...] = (
            ("handoffs", HandoffRecord, w.handoffs_doomed, w.handoff_seqs, w.handoffs),
            ("runs", RunRecord, w.runs_doomed, w.run_seqs, w.runs),
            ("waits", WaitRecord, w.waits_doomed, w.wait_seqs, w.waits),
        )
        for table, record, doomed, seqs, rows in tables:
            if doomed:
                with statements.registered(
                    con, {"hs_doomed": pa.table({"row_seq": pa.array(doomed, I64)})}
                ):
                    statements.run(
                        con, f"engine/delete_{table}", {"lo": min(doomed), "hi": max(doomed)}
                    )
            if rows:
                with statements.registered(
                    con, {f"hs_{table[:-1]}_rows": records.table(record, seqs, rows)}
                ):
                    statements.run(con, f"engine/insert_{table}")
        self.stats["handoff_rows_written"] += len(w.handoffs)
        self.stats["run_rows_written"] += len(w.runs)

    def _flush_rollups(self, con: Connection, w: _Writes) -> None:
        """Apply the rollup deltas of `w`, and record new services and first outcomes."""
        delta = [(k, n) for k, n in w.daily.items() if n]
        if delta:
            daily = pa.Table.from_arrays(
                [
                    pa.array([k[0] for k, _ in delta], pa.int32()).cast(pa.date32()),
                    *(pa.array([k[i] for k, _ in delta], STR) for i in (1, 2, 3, 4)),
                    pa.array([n for _, n in delta], I64),
                ],
                schema=DAILY_SCHEMA,
            )
            with statements.registered(con, {"hs_daily_delta": daily}):
                statements.run(con, "engine/upsert_daily")
        # Hourly buckets, and the same folded by day (hour // 24) for long windows.
        daily_edges: Counter[tuple] = Counter()
        for k, n in w.edges.items():
            daily_edges[(k[0] // 24, *k[1:])] += n
        daily_usage: dict[tuple, list[int]] = {}
        for k, add in w.edge_usage.items():
            _shift(daily_usage, (k[0] // 24, *k[1:]), add, 1)
        daily_runs: defaultdict[tuple, list[tuple[int, str]]] = defaultdict(list)
        for k, runs in w.edge_runs.items():
            daily_runs[(k[0] // 24, *k[1:])].extend(runs)
        for name, counts, usage in (
            ("upsert_edge_hourly", w.edges, w.edge_usage),
            ("upsert_edge_daily", daily_edges, daily_usage),
        ):
            edge_delta = [
                (k, counts.get(k, 0), usage.get(k) or NO_USAGE)
                for k in counts.keys() | usage.keys()
                if counts.get(k) or any(usage.get(k) or ())
            ]
            if edge_delta:
                with statements.registered(con, {"hs_edge_delta": _edge_table(edge_delta)}):
                    statements.run(con, f"engine/{name}")
        run_delta = [(k, v) for k, v in w.run_daily.items() if any(v)]
        if run_delta:
            cols = list(zip(*(k + tuple(v) for k, v in run_delta), strict=True))
            table = pa.Table.from_arrays(
                [pa.array(c, f.type) for c, f in zip(cols, RUN_DAILY_SCHEMA, strict=True)],
                schema=RUN_DAILY_SCHEMA,
            )
            with statements.registered(con, {"hs_run_daily_delta": table}):
                statements.run(con, "engine/upsert_run_daily")
        for name, lists in (
            ("upsert_edge_runs", w.edge_runs),
            ("upsert_edge_runs_daily", daily_runs),
        ):
            if lists:
                with statements.registered(con, {"hs_edge_runs": _edge_runs_table(lists)}):
                    statements.run(con, f"engine/{name}")
        if w.service_outcomes:
            svcs = sorted(w.service_outcomes)
            outcomes = pa.table(
                {
                    "service": pa.array(svcs, STR),
                    "first_outcome_ns": pa.array([w.service_outcomes[x] for x in svcs], I64),
                }
            )
            with statements.registered(con, {"hs_service_outcomes": outcomes}):
                statements.run(con, "engine/upsert_service_outcomes")
        if w.services:
            new_services = pa.table({"service": sorted(w.services)})
            with statements.registered(con, {"hs_new_services": new_services}):
                statements.run(con, "engine/insert_services")
            self.services |= w.services


def _edge_table(delta: Sequence[tuple[tuple, int, Sequence[int]]]) -> pa.Table:
    """Rollup deltas (key, count, usage sums) as Arrow; the bucket column is an hour or a
    day (same schema)."""
    cols = list(zip(*(k + (n, *sums) for k, n, sums in delta), strict=True))
    return pa.Table.from_arrays(
        [pa.array(c, f.type) for c, f in zip(cols, EDGE_SCHEMA, strict=True)],
        schema=EDGE_SCHEMA,
    )


def _edge_runs_table(lists: dict[tuple, list[tuple[int, str]]]) -> pa.Table:
    """Each bucket's newly seen runs, newest first, distinct, at most EDGE_RUNS_KEPT."""
    keys = list(lists)
    cols = list(zip(*keys, strict=True))
    newest = [
        list(dict.fromkeys(r for _, r in sorted(lists[k], reverse=True)))[:EDGE_RUNS_KEPT]
        for k in keys
    ]
    return pa.Table.from_arrays(
        [
            *(pa.array(c, f.type) for c, f in zip(cols, EDGE_RUNS_SCHEMA, strict=False)),
            pa.array(newest, STRS),
        ],
        schema=EDGE_RUNS_SCHEMA,
    )


def _day(ns: int) -> dt.date:
    return dt.date(1970, 1, 1) + dt.timedelta(days=ns // NS_PER_DAY)


def _handoff_row(run: RunState, service, h: HandoffState, seq: int, ev) -> HandoffRecord:
    # Positional, in HandoffRecord's field order, then `_make`: this runs once per changed
    # handoff, and building a 47-field NamedTuple by keyword cost the judge 5-10 % (bench
    # /bench_judge_throughput.py). tests/collector/test_records.py ties each position to
    # its field by name.
    tl = h.timeline
    assert tl is not None
    v = h.vals  # by index, not h.get(name): the same reason
    return HandoffRecord._make(
        (
            run.run_id,
            run.key,
            h.handoff_id,
            service,
            seq,
            ev.from_agent,
            ev.to_agent,
            v[_F_TURN],
            h.first_seen_ns,
            h.last_seen_ns,
            v[_F_FINGERPRINT],
            v[_F_STATE_VERSION],
            v[_F_FORWARDED],
            v[_F_TOTAL],
            ev.route_declared,
            ev.route_goto,
            ev.control_before,
            ev.control_after,
            ev.tool_call_id,
            ev.tool_call_closed,
            tuple(ev.required_keys),
            tuple(ev.missing_keys),
            ev.destination_started,
            ev.rejection_reason,
            tuple(v[_F_REJECTION_FIELDS] or ()),
            v[_F_REASON],
            v[_F_CONTRACT_VERSION],
            ev.loop,
            ev.run_stopped,
            ev.claims_done,
            ev.outcome_result,
            ev.wait_seen,
            *_WAIT_FACTS(ev),
            *tl,
            tl.unhealthy_from_ns,
            ev.kind,
            tuple(v[_F_UNOBSERVED] or ()),
            ev.run_status,
            *_usage_cols(h.leg),
            v[_F_TASK_ID],
            ev.task_state,
        )
    )


def _usage_cols(u: Usage | None) -> tuple:
    """input_tokens, output_tokens, model_calls, cost_usd, model: as the rows store them."""
    if u is None:
        return (None, None, None, None, None)
    return (u.input_tokens, u.output_tokens, u.model_calls, u.cost_usd, u.model)


(
    _F_TURN,
    _F_FINGERPRINT,
    _F_STATE_VERSION,
    _F_FORWARDED,
    _F_TOTAL,
    _F_REJECTION_FIELDS,
    _F_REASON,
    _F_CONTRACT_VERSION,
    _F_UNOBSERVED,
    _F_TASK_ID,
) = (
    F[name]
    for name in (
        "turn",
        "fingerprint",
        "state_version",
        "history_items_forwarded",
        "history_items_total",
        "rejection_fields",
        "reason",
        "contract_version",
        "unobserved",
        "task_id",
    )
)


_WAIT_FACTS = operator.attrgetter(*(field for field, _ in WAIT_ATTRIBUTES.values()))
"""owner, reason, deadline, resume token, persisted, decision: in this order in both
`handoffs` (wait_owner, ...) and `waits` (owner, ...)."""


def _run_row(run: RunState, service: str | None, view: RunView) -> RunRecord:
    # Positional, in RunRecord's field order (see _handoff_row for why; the same test).
    return RunRecord._make(
        (
            run.run_id,
            run.key,
            service,
            run.first_seen_ns,
            run.last_seen_ns,
            run.min_received_ns,
            run.max_received_ns,
            view.started_ns,
            view.ended_ns,
            view.last_handoff_ns,
            view.status,
            view.final_agent,
            view.turns,
            view.current_agent,
            view.handoff_count,
            tuple(view.path),
            view.loop,
            tuple(view.loop_cycle),
            view.loop_repeats,
            view.false_complete,
            view.failed,
            view.outcome_result,
            view.verifier,
            view.pending_approvals,
            *view.timeline,
            view.delegation_count,
            view.unverified,
            view.verification_expected,
            tuple(view.unobserved),
            run.capped,
            view.source,
            *_usage_cols(view.usage),
            view.usage.unpriced if view.usage is not None else (),
            *_usage_cols(view.burned)[:4],
            view.budget_remaining,
            view.budget_total,
            run.get("conversation_id"),
            view.start_agent,
            view.first_to_agent,
            run.vals.get("entry_agents") or (),
        )
    )


def _wait_row(run: RunState, service: str | None, h: HandoffState, ev, tl) -> WaitRecord:
    # Positional, in WaitRecord's field order (see _handoff_row for why; the same test).
    return WaitRecord._make(
        (
            run.run_id,
            run.key,
            h.handoff_id,
            service,
            ev.from_agent,
            ev.to_agent,
            *_WAIT_FACTS(ev),
            h.wait_first_ns,
            tuple(wait_missing(ev)),
            tl.verdict,
            tl.flip1_ns,
            tl.flip1_verdict,
        )
    )
