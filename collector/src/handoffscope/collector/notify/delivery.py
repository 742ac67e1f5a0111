"""Posting events to one destination: batches, a rate limit, retries, a signature.

One `Sender` thread per destination takes events from its queue and posts them:

- **Batches.** One post carries up to `max_batch` events — whatever has queued while
  the previous post was in flight or the rate limit held it. A flood (10,000 waits
  going overdue at once) becomes a few hundred posts, not 10,000.
- **Rate limit.** A token bucket of `burst` posts refilled at `rate` posts per second;
  retries spend tokens too, so a failing receiver is not hammered.
- **Retries.** Anything but a 2xx answer (a refused connection, a timeout after
  `timeout` seconds, a 500) is retried with exponential backoff: `backoff` seconds,
  doubled per attempt up to `backoff_max`, each delay drawn from [d/2, d] (jitter, so
  many collectors do not retry in step); a numeric `Retry-After` is honoured within
  `backoff_max`. After `max_attempts` the batch is given up (`failed`) and logged.
- **Authentication.** With a secret, `X-Handoffscope-Signature-256: sha256=<hex>` is
  the HMAC-SHA256 of the exact body bytes; with a token, `Authorization: Bearer <token>`.
  `X-Handoffscope-Delivery` stays the same across the retries of one batch, so a
  receiver that saw a post whose answer was lost can drop the copy.

The sender never touches the store: each outcome goes to `on_result`, and the notifier
records it. Shutdown (`close`) abandons waits and backoffs at once; what was not sent
stays `pending` in the store and is sent by the next start.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import queue
import random
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..timefmt import iso
from .routing import FORMAT_SLACK, Destination

log = logging.getLogger(__name__)

BODY_VERSION = 1
SIGNATURE_HEADER = "X-Handoffscope-Signature-256"
DELIVERY_HEADER = "X-Handoffscope-Delivery"
ATTEMPT_HEADER = "X-Handoffscope-Attempt"
SLACK_LINES = 20
"""Events listed in a Slack message; the rest are counted ("and 12 more")."""

SENT, FAILED, PENDING = "sent", "failed", "pending"


@dataclass(frozen=True)
class Queued:
    key: str
    event: dict[str, Any]
    attempts: int = 0
    """Attempts already made (a pending delivery reloaded after a restart)."""


@dataclass(frozen=True)
class Result:
    destination: str
    keys: tuple[str, ...]
    status: str
    attempts: int
    sent_ns: int | None
    answer: str
    """`200`, `500`, `timeout`, `refused`…: for the counters, never a body."""


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _slack_line(e: dict[str, Any]) -> str:
    run = f"<{e['link']}|{e['run_id']}>" if e.get("link") else f"`{e['run_id']}`"
    parts = [f"*{e['event'].replace('_', ' ')}*", f"run {run}"]
    if e.get("service"):
        parts.append(f"service `{e['service']}`")
    if e.get("owner"):
        parts.append(f"owner `{e['owner']}`")
    if e.get("reason"):
        parts.append(f"reason `{e['reason']}`")
    if e.get("deadline"):
        parts.append(f"deadline {e['deadline']}")
    if e.get("agent"):
        parts.append(f"agent `{e['agent']}`")
    if e.get("loop_cycle"):
        parts.append("cycle " + " → ".join(e["loop_cycle"]))
    if e.get("missing"):
        parts.append("missing " + ", ".join(e["missing"]))
    return "• " + " · ".join(parts)


def body(destination: Destination, events: list[dict[str, Any]], sent_ns: int) -> bytes:
    """The bytes posted: the generic JSON document or a Slack-compatible message."""
    if destination.format == FORMAT_SLACK:
        lines = [_slack_line(e) for e in events[:SLACK_LINES]]
        if len(events) > SLACK_LINES:
            lines.append(f"… and {len(events) - SLACK_LINES} more")
        doc: dict[str, Any] = {
            "text": f"handoffscope: {len(events)} event{'s' if len(events) != 1 else ''}\n"
            + "\n".join(lines)
        }
    else:
        doc = {
            "version": BODY_VERSION,
            "source": "handoffscope",
            "destination": destination.name,
            "sent_at": iso(sent_ns),
            "events": events,
        }
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


class TokenBucket:
    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.clock = clock
        self.at = clock()

    def delay(self) -> float:
        """Seconds until a token is available (0: take it now)."""
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        return 0.0 if self.tokens >= 1 else (1 - self.tokens) / self.rate

    def take(self) -> None:
        self.tokens -= 1


def backoff_delay(d: Destination, attempt: int, retry_after: float | None = None) -> float:
    """Delay before attempt `attempt + 1`, after `attempt` failed ones."""
    full = min(d.backoff_max, d.backoff * (2 ** (attempt - 1)))
    delay = random.uniform(full / 2, full)
    if retry_after is not None:
        delay = max(delay, min(retry_after, d.backoff_max))
    return delay


class Sender:
    """The delivery thread of one destination."""

    def __init__(
        self,
        destination: Destination,
        on_result: Callable[[Result], None],
        *,
        user_agent: str = "handoffscope",
    ) -> None:
        self.destination = destination
        self.on_result = on_result
        self.user_agent = user_agent
        self.queue: queue.SimpleQueue[Queued] = queue.SimpleQueue()
        self.bucket = TokenBucket(destination.rate, destination.burst)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"notify-{destination.name}", daemon=True
        )
        self._pending = 0
        self._pending_lock = threading.Lock()

    @property
    def pending(self) -> int:
        """Events queued or in the batch being sent (the pending gauge)."""
        return self._pending

    def _count(self, n: int) -> None:
        with self._pending_lock:
            self._pending += n

    def start(self) -> None:
        self._thread.start()

    def put(self, item: Queued) -> None:
        self._count(1)
        self.queue.put(item)

    def close(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    # --- the thread ------------------------------------------------------------------

    def _take_batch(self) -> list[Queued]:
        try:
            first = self.queue.get(timeout=0.2)
        except queue.Empty:
            return []
        batch = [first]
        while len(batch) < self.destination.max_batch:
            try:
                batch.append(self.queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _wait_token(self) -> bool:
        while not self._stop.is_set():
            delay = self.bucket.delay()
            if delay == 0:
                self.bucket.take()
                return True
            self._stop.wait(delay)
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            batch = self._take_batch()
            if batch:
                self._deliver(batch)

    def _deliver(self, batch: list[Queued]) -> None:
        d = self.destination
        keys = tuple(q.key for q in batch)
        events = [q.event for q in batch]
        delivery = uuid.uuid4().hex
        attempt = max(q.attempts for q in batch)
        try:
            while not self._stop.is_set():
                if not self._wait_token():
                    return
                attempt += 1
                sent_ns = time.time_ns()
                ok, answer, retry_after = self._post(body(d, events, sent_ns), delivery, attempt)
                if ok:
                    self.on_result(Result(d.name, keys, SENT, attempt, time.time_ns(), answer))
                    return
                if attempt >= d.max_attempts:
                    log.warning(
                        "notify %s: gave up on %d events after %d attempts (last: %s)",
                        d.name,
                        len(keys),
                        attempt,
                        answer,
                    )
                    self.on_result(Result(d.name, keys, FAILED, attempt, None, answer))
                    return
                self.on_result(Result(d.name, keys, PENDING, attempt, None, answer))
                self._stop.wait(backoff_delay(d, attempt, retry_after))
        finally:
            self._count(-len(batch))

    def _post(self, data: bytes, delivery: str, attempt: int) -> tuple[bool, str, float | None]:
        d = self.destination
        headers = {
            "Content-Type": "application/json",
            "User-Agent": self.user_agent,
            DELIVERY_HEADER: delivery,
            ATTEMPT_HEADER: str(attempt),
        }
        if d.secret:
            headers[SIGNATURE_HEADER] = sign(d.secret, data)
        if d.token:
            headers["Authorization"] = f"Bearer {d.token}"
        req = urllib.request.Request(d.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=d.timeout) as resp:
                resp.read()
                return 200 <= resp.status < 300, str(resp.status), None
        except urllib.error.HTTPError as exc:
            retry_after = exc.headers.get("Retry-After") if exc.headers else None
            try:
                wait = float(retry_after) if retry_after else None
            except ValueError:
                wait = None
            return False, str(exc.code), wait
        except TimeoutError:
            return False, "timeout", None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                return False, "timeout", None
            return False, "unreachable", None
        except (OSError, ValueError):
            return False, "error", None
