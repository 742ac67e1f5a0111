"""Direct notifications end to end: real collector process → real local HTTP receiver.

Evidence goes in through the real OTLP exporter; the collector's notifier finds the
events in its derived tables and posts them. Everything is observed from outside: the
receiver's log of posts, the query API, /metrics. Waiting is `until(...)`; "exactly
once" is proved by a sentinel — an event seeded after the others whose arrival shows
the notifier has re-read everything at least once more since they were sent.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections import Counter
from typing import Any

from alerts_support import until
from support.evidence import Run, S

from handoffscope.instrumentation import semconv as sc

SECRET = "s3cret-for-tests"
TOKEN = "receiver-token"
DASH = "http://dash.example:8501"
PLANTED = "PLANTED-refund my order 4111-1111"
EVENT_FIELDS = {
    "key", "event", "run_id", "handoff_id", "service", "owner", "reason", "deadline",
    "checkpointed_at", "missing", "from_agent", "to_agent", "agent", "loop_cycle",
    "last_activity_at", "verdict", "next_step", "detected_at", "link",
}  # fmt: skip


def notify_args(url: str, *, options: str = "rate=50&burst=50", extra: tuple = ()) -> list[str]:
    return [
        "--grace-seconds", "1",
        "--notify-poll-seconds", "0.2",
        "--notify-stuck-factor", "2",
        "--dashboard-url", DASH,
        "--notify", f"{url}#{options}",
        *extra,
    ]  # fmt: skip


def seen(receiver: Any) -> Counter:
    return Counter((e["event"], e["run_id"]) for e in receiver.events())


def by_key(receiver: Any) -> Counter:
    """What a receiver that drops event keys it has handled keeps (docs/alerts.md): each
    event once, by its stable `key`."""
    kept: dict[str, tuple[str, str]] = {}
    for e in receiver.events():
        kept.setdefault(e["key"], (e["event"], e["run_id"]))
    return Counter(kept.values())


def seed_everything(sender: Any, now: int) -> set[tuple[str, str]]:
    """One run per event kind; returns the (event, run_id) pairs that must arrive."""
    old = now - 60 * S
    r = Run(sender, "r-wait", now - 2 * S)
    r.started()
    r.handoff("h1", "triage", "refunds")
    r.wait("h1", deadline=now + 3600 * S, at=0.2)
    r = Run(sender, "r-overdue", now - 2 * S)
    r.started()
    r.handoff("h1", "triage", "refunds")
    r.wait("h1", deadline=now + 4 * S, owner="finance", at=0.2)  # overdue soon after
    r = Run(sender, "r-uncertain", now - 2 * S)
    r.started()
    r.handoff("h1", "triage", "refunds")
    r.wait("h1", deadline=now + 3600 * S, owner=None, at=0.2)
    # Content planted beside the evidence: the collector's allowlist drops it, so no
    # notification can carry it.
    r.span(sc.SPAN_WAIT, "h1", at=0.3, **{"gen_ai.prompt": PLANTED, "wait.note": PLANTED})
    r = Run(sender, "r-loop", now - 2 * S)
    r.started()
    r.loop()
    r.ended(at=1.0)
    r = Run(sender, "r-stuck", old)
    r.started()
    r.handoff("h1", "triage", "billing")
    assert sender.send().name == "SUCCESS"
    return {
        (sc.NOTIFY_WAIT_CHECKPOINTED, "r-wait"),
        (sc.NOTIFY_WAIT_CHECKPOINTED, "r-overdue"),
        (sc.NOTIFY_APPROVAL_OVERDUE, "r-overdue"),
        (sc.NOTIFY_WAIT_UNCERTAIN, "r-uncertain"),
        (sc.NOTIFY_RUN_LOOPING, "r-loop"),
        (sc.NOTIFY_RUN_STUCK, "r-stuck"),
    }


def sentinel(sender: Any, run_id: str) -> tuple[str, str]:
    r = Run(sender, run_id, time.time_ns() - 60 * S)
    r.started()
    r.handoff("h1", "triage", "billing")
    assert sender.send().name == "SUCCESS"
    return (sc.NOTIFY_RUN_STUCK, run_id)


def test_each_event_arrives_once_signed_with_the_documented_body(
    collector_factory, otlp_sender_factory, receiver
) -> None:
    env = {"HANDOFFSCOPE_NOTIFY_SECRET": SECRET, "HANDOFFSCOPE_NOTIFY_TOKEN": TOKEN}
    collector = collector_factory(env=env, args=notify_args(receiver.url))
    sender = otlp_sender_factory(collector, service="support")
    expected = seed_everything(sender, time.time_ns())
    until(lambda: seen(receiver), lambda got: expected <= set(got))
    last = sentinel(sender, "r-sentinel")
    got = until(lambda: seen(receiver), lambda got: last in got)

    assert set(got) == expected | {last}, "no event beyond the ones seeded"
    assert all(n == 1 for n in got.values()), got
    for post in receiver.snapshot():
        assert PLANTED.encode() not in post.body
        assert (
            post.headers["X-Handoffscope-Signature-256"]
            == "sha256=" + hmac.new(SECRET.encode(), post.body, hashlib.sha256).hexdigest()
        )
        assert post.headers["Authorization"] == f"Bearer {TOKEN}"
        assert post.headers["Content-Type"] == "application/json"
        doc = post.json()
        assert set(doc) == {"version", "source", "destination", "sent_at", "events"}
        assert (doc["version"], doc["source"], doc["destination"]) == (
            1,
            "handoffscope",
            "notify-1",
        )
        for e in doc["events"]:
            assert set(e) == EVENT_FIELDS
            assert e["link"] == f"{DASH}/run_detail?run_id={e['run_id']}"
            assert e["service"] == "support"
    events = {(e["event"], e["run_id"]): e for e in receiver.events()}
    overdue = events[(sc.NOTIFY_APPROVAL_OVERDUE, "r-overdue")]
    assert (overdue["owner"], overdue["reason"], overdue["handoff_id"]) == (
        "finance",
        "refund_over_limit",
        "h1",
    )
    assert overdue["verdict"] == sc.APPROVAL_OVERDUE and overdue["deadline"].endswith("Z")
    assert events[(sc.NOTIFY_WAIT_UNCERTAIN, "r-uncertain")]["missing"] == ["owner"]
    loop = events[(sc.NOTIFY_RUN_LOOPING, "r-loop")]
    assert loop["loop_cycle"] and set(loop["loop_cycle"]) <= {"planner", "coder"}
    stuck = events[(sc.NOTIFY_RUN_STUCK, "r-stuck")]
    assert stuck["agent"] == "billing" and stuck["owner"] is None

    # The API says what was sent, on run detail and on the approvals rows.
    run = collector.api("/api/v1/runs/r-overdue")
    kinds = [(n["event"], n["status"], n["destination"]) for n in run["notifications"]]
    assert kinds == [
        (sc.NOTIFY_WAIT_CHECKPOINTED, "sent", "notify-1"),
        (sc.NOTIFY_APPROVAL_OVERDUE, "sent", "notify-1"),
    ]
    assert all(n["sent_at"] for n in run["notifications"])
    (row,) = [
        a for a in collector.api("/api/v1/approvals")["approvals"] if a["run_id"] == "r-overdue"
    ]
    assert [n["event"] for n in row["notifications"]] == [
        sc.NOTIFY_WAIT_CHECKPOINTED,
        sc.NOTIFY_APPROVAL_OVERDUE,
    ]
    assert (
        collector.metric(
            "handoffscope_notifications_total",
            destination="notify-1",
            event=sc.NOTIFY_RUN_LOOPING,
            status="sent",
        )
        == 1
    )


def _attempts(receiver: Any, key: str) -> list[Any]:
    return [p for p in receiver.snapshot() if any(e["key"] == key for e in p.json()["events"])]


def seed_history(sender: Any, now: int) -> None:
    """What a backfill sends: a loop that ended two hours ago, a wait checkpointed three
    hours ago whose deadline passed two hours ago, a run silent for two hours."""
    hours = 3600 * S
    r = Run(sender, "old-loop", now - 2 * hours)
    r.started()
    r.loop()
    r.ended(at=1.0)
    r = Run(sender, "old-overdue", now - 3 * hours)
    r.started()
    r.handoff("h1", "triage", "refunds")
    r.wait("h1", deadline=now - 2 * hours, owner="finance", at=0.2)
    r = Run(sender, "old-stuck", now - 2 * hours)
    r.started()
    r.handoff("h1", "triage", "billing")
    assert sender.send().name == "SUCCESS"


def test_history_pages_nobody_and_fresh_events_still_arrive(
    collector_factory, otlp_sender_factory, receiver_factory
) -> None:
    receiver = receiver_factory()
    collector = collector_factory(
        args=notify_args(receiver.url, extra=("--notify-max-age-seconds", "600"))
    )
    sender = otlp_sender_factory(collector, service="support")
    seed_history(sender, time.time_ns())
    expected = seed_everything(sender, time.time_ns())
    got = until(lambda: seen(receiver), lambda got: expected <= set(got))
    last = sentinel(sender, "r-fresh-last")  # seen after every event above was handled
    got = until(lambda: seen(receiver), lambda got: last in got)
    assert not {run for _event, run in got if run.startswith("old-")}, got
    # The board still shows the history: freshness is about paging people, not about facts.
    assert collector.run("old-loop", until=lambda r: r["loop"])["loop"] is True

    # With no bound (0), the same history is sent: the filter above is what held it back.
    everything = receiver_factory()
    collector.restart(args=notify_args(everything.url, extra=("--notify-max-age-seconds", "0")))
    old = {(sc.NOTIFY_RUN_LOOPING, "old-loop"), (sc.NOTIFY_APPROVAL_OVERDUE, "old-overdue")}
    old.add((sc.NOTIFY_RUN_STUCK, "old-stuck"))
    until(lambda: seen(everything), lambda got: old <= set(got))


def test_failing_receiver_gets_retries_with_growing_backoff(
    collector_factory, otlp_sender_factory, receiver_factory
) -> None:
    # Three failures of two kinds: answered 500, and held past the notify timeout.
    receiver = receiver_factory(answers=[500, "hang", 500])
    options = "backoff=0.4&backoff_max=10&timeout=1&max_attempts=6&rate=50&burst=50"
    collector = collector_factory(args=notify_args(receiver.url, options=options))
    sender = otlp_sender_factory(collector)
    last = sentinel(sender, "r-retried")
    until(lambda: seen(receiver), lambda got: last in got)

    posts = receiver.snapshot()
    assert [p.answer for p in posts] == [500, "hang", 500, 200]
    assert [p.headers["X-Handoffscope-Attempt"] for p in posts] == ["1", "2", "3", "4"]
    assert len({p.headers["X-Handoffscope-Delivery"] for p in posts}) == 1, "one delivery id"
    assert all(
        p.body == posts[0].body or p.json()["events"] == posts[0].json()["events"] for p in posts
    )
    # Backoff: attempt n+1 waits at least half of backoff * 2**(n-1) after attempt n
    # ended (jitter draws from [d/2, d]); lower bounds only — a slow machine only adds.
    ends = [posts[0].at, posts[1].at + 1.0, posts[2].at]  # a hang ends at the 1 s timeout
    for n, (end, nxt) in enumerate(zip(ends, posts[1:], strict=True), 1):
        assert nxt.at - end >= 0.4 * 2 ** (n - 1) / 2 * 0.95, (n, nxt.at - end)
    assert (
        collector.metric(
            "handoffscope_notification_posts_total", destination="notify-1", answer="500"
        )
        == 2
    )
    assert (
        collector.metric(
            "handoffscope_notification_posts_total", destination="notify-1", answer="timeout"
        )
        == 1
    )
    assert seen(receiver)[last] == 1


def test_restart_does_not_resend_and_pending_ones_survive(
    collector_factory, otlp_sender_factory, receiver_factory
) -> None:
    receiver = receiver_factory()
    collector = collector_factory(args=notify_args(receiver.url))
    sender = otlp_sender_factory(collector)
    expected = seed_everything(sender, time.time_ns())
    until(lambda: seen(receiver), lambda got: expected <= set(got))

    # A destination that is down across the restart: its event stays pending in the
    # store and is sent by the next process, once.
    down = receiver_factory(answers=[503] * 50)
    collector.restart(
        args=notify_args(
            receiver.url,
            extra=(
                "--notify",
                f"{down.url}#name=down&backoff=0.2&backoff_max=0.2&rate=50&burst=50",
            ),
        )
    )
    sender = otlp_sender_factory(collector)
    first = sentinel(sender, "r-after-restart")
    until(lambda: seen(receiver), lambda got: first in got)
    until(lambda: len(down.snapshot()), lambda n: n >= 1)

    down.answers = []  # the destination recovers, but only after another restart
    collector.restart()
    until(lambda: seen(down), lambda got: first in got)
    last = sentinel(otlp_sender_factory(collector), "r-last")
    got = until(lambda: seen(receiver), lambda got: last in got)
    assert all(n == 1 for n in got.values()), got
    assert set(got) == expected | {first, last}
    # `down` joined after the first events: it hears of what is still true then (the
    # waits still open, the runs still in the window), each once, like every destination.
    down_seen = until(lambda: seen(down), lambda got: last in got)
    assert all(n == 1 for n in down_seen.values()), down_seen


def test_flood_of_overdue_waits_is_rate_limited_and_batched(
    collector_factory, otlp_sender_factory, receiver
) -> None:
    n_waits, rate, burst = 10_000, 4.0, 2
    options = f"rate={rate}&burst={burst}&max_batch=500"
    collector = collector_factory(args=notify_args(receiver.url, options=options))
    sender = otlp_sender_factory(collector, service="flood")
    now = time.time_ns()
    for i in range(n_waits):
        r = Run(sender, f"flood-{i:05d}", now - 10 * S)
        r.wait("w", deadline=now - 5 * S, at=0.0)
        if len(sender.pending()) >= 1000:
            assert sender.send().name == "SUCCESS"
    assert sender.send().name == "SUCCESS"

    # Each wait: its owner is told it exists, and it is escalated: two events.
    n_events = 2 * n_waits
    events = until(lambda: receiver.events(), lambda got: len(got) >= n_events, timeout=180)
    posts = receiver.snapshot()
    keys = Counter(e["key"] for e in events)
    assert len(keys) == n_events and set(keys.values()) == {1}, "every event once"
    assert Counter(e["event"] for e in events) == {
        sc.NOTIFY_WAIT_CHECKPOINTED: n_waits,
        sc.NOTIFY_APPROVAL_OVERDUE: n_waits,
    }
    assert len(posts) <= n_events / 500 + 5, "batched, not one post per event"
    # The token bucket: within any one second, at most burst + rate posts arrive.
    times = sorted(p.at for p in posts)
    for i, t in enumerate(times):
        in_window = sum(1 for u in times[i:] if u - t < 1.0)
        assert in_window <= burst + rate, (i, in_window)


def test_two_collectors_on_one_postgresql_send_each_event_once(
    postgres_dsn, collector_factory, otlp_sender_factory, receiver
) -> None:
    """Both collectors run a notifier over the shared tables; the notify lease lets one
    send. Evidence goes into both; every event arrives, and after the sender is killed
    the other takes over: events found later still arrive.

    Delivery is at least once (docs/alerts.md): a post answered 200 whose `sent` mark the
    killed holder had not yet written is sent again by the one that takes over. Each event
    carries the same `key` every time, and a receiver that drops keys it has handled gets
    each event exactly once — what this asserts; a repeat is allowed only for an event
    first delivered before the kill (measured: a fresh-clone CI run on a loaded machine
    repeated an `approval_overdue` delivered just before it)."""
    args = notify_args(receiver.url, extra=("--store", postgres_dsn))
    first, second = collector_factory(args=args), collector_factory(args=args)
    now = time.time_ns()
    expected = seed_everything(otlp_sender_factory(first, service="support"), now)
    expected.add(sentinel(otlp_sender_factory(second, service="support"), "r-second"))
    until(lambda: seen(receiver), lambda got: expected <= set(got))
    held = [c.metric("handoffscope_notify_lease_held") for c in (first, second)]
    assert sorted(held) == [0, 1], "one sender"
    holder, other = (first, second) if held[0] else (second, first)
    holder.kill()
    killed_at = time.monotonic()
    last = sentinel(otlp_sender_factory(other, service="support"), "r-after-kill")
    got = until(lambda: by_key(receiver), lambda got: last in got)
    assert set(got) == expected | {last}
    repeated = {event for event, n in seen(receiver).items() if n > 1}
    before_kill = {
        (e["event"], e["run_id"])
        for p in receiver.snapshot()
        if p.at < killed_at and p.answer == 200
        for e in p.json()["events"]
    }
    assert repeated <= before_kill, (repeated, before_kill)
