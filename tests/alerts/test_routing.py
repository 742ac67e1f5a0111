"""Routing by owner, service and event through a `--notify-config` file, and the
Slack-compatible body: a real collector, two real receivers, the real routing file.
A broken file stops the collector at start with the reason."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from alerts_support import until
from support.evidence import Run, S

from handoffscope.collector.notify.routing import RoutingError, parse_file
from handoffscope.instrumentation import semconv as sc


def test_owner_and_event_routes_reach_only_their_destination(
    collector_factory, otlp_sender_factory, receiver_factory, tmp_path: Path
) -> None:
    finance, oncall = receiver_factory(), receiver_factory()
    config = tmp_path / "routes.json"
    config.write_text(
        json.dumps(
            {
                "destinations": {
                    "finance": {
                        "url": finance.url,
                        "format": "slack",
                        "secret_env": "FINANCE_SECRET",
                        "rate": 50,
                        "burst": 50,
                    },
                    "oncall": {"url_env": "ONCALL_URL", "token_env": "ONCALL_TOKEN"},
                },
                "routes": [
                    {"owner": "finance", "to": ["finance"]},
                    {"service": "support", "event": ["run_stuck", "run_looping"], "to": "oncall"},
                ],
            }
        )
    )
    env = {"FINANCE_SECRET": "fin-key", "ONCALL_URL": oncall.url, "ONCALL_TOKEN": "oc-token"}
    collector = collector_factory(
        env=env,
        args=["--notify-config", str(config), "--grace-seconds", "1", "--notify-poll-seconds", "0.2",
              "--notify-stuck-factor", "2", "--dashboard-url", "http://dash.example"],
    )  # fmt: skip
    sender = otlp_sender_factory(collector, service="support")
    now = time.time_ns()
    r = Run(sender, "fin-wait", now - 60 * S)
    r.handoff("h1", "triage", "refunds")
    r.wait("h1", deadline=now - 10 * S, owner="finance", at=0.2)
    r = Run(sender, "ops-wait", now - 60 * S)
    r.handoff("h1", "triage", "refunds")
    r.wait("h1", deadline=now - 10 * S, owner="ops-lead", at=0.2)
    r = Run(sender, "stuck", now - 60 * S)
    r.started()
    r.handoff("h1", "triage", "billing")
    assert sender.send().name == "SUCCESS"

    posts = until(finance.snapshot, lambda p: len(p) >= 1)
    got = until(lambda: [p.json() for p in oncall.snapshot()], lambda p: len(p) >= 1)
    # A later sentinel for oncall proves nothing else was on its way to either.
    r = Run(sender, "stuck-late", time.time_ns() - 60 * S)
    r.started()
    r.handoff("h1", "triage", "billing")
    assert sender.send().name == "SUCCESS"
    got = until(
        lambda: [e for p in oncall.snapshot() for e in p.json()["events"]],
        lambda es: any(e["run_id"] == "stuck-late" for e in es),
    )
    assert sorted((e["event"], e["run_id"]) for e in got) == [
        (sc.NOTIFY_RUN_STUCK, "stuck"),
        (sc.NOTIFY_RUN_STUCK, "stuck-late"),
    ]
    assert all(p.headers["Authorization"] == "Bearer oc-token" for p in oncall.snapshot())
    posts = finance.snapshot()
    assert len(posts) == 1
    (post,) = posts
    assert (
        post.headers["X-Handoffscope-Signature-256"]
        == "sha256=" + hmac.new(b"fin-key", post.body, hashlib.sha256).hexdigest()
    )
    assert "Authorization" not in post.headers
    text = post.json()["text"]
    assert set(post.json()) == {"text"}
    assert text.startswith("handoffscope: 2 events\n")  # told it exists, and escalated
    assert "*wait checkpointed*" in text and "*approval overdue*" in text
    assert "owner `finance`" in text
    assert "<http://dash.example/run_detail?run_id=fin-wait|fin-wait>" in text
    assert "ops-wait" not in text


def test_a_broken_routing_file_stops_the_collector_with_the_reason(tmp_path: Path) -> None:
    config = tmp_path / "routes.json"
    config.write_text(json.dumps({"destinations": {"a": {"url": "http://x.example"}},
                                  "routes": [{"to": ["b"]}]}))  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "handoffscope.collector", "--db", str(tmp_path / "h.duckdb"),
         "--http-port", "0", "--grpc-port", "0", "--notify-config", str(config)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "route 1: unknown destinations ['b']" in done.stderr
    assert not (tmp_path / "h.duckdb").exists(), "refused before opening the store"


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"destinations": {"a": {"url": "ftp://x"}}}, "url must be http"),
        ({"destinations": {"a": {"url": "http://x", "format": "xml"}}}, "format must be one of"),
        ({"destinations": {"a": {"url": "http://x", "rate": 0}}}, "must be > 0"),
        ({"destinations": {"a": {"url": "http://x", "colour": "red"}}}, "unknown option 'colour'"),
        ({"destinations": {"a": {"url_env": "NOPE"}}}, "environment variable 'NOPE' is not set"),
        ({"destinations": {"a": {"url": "http://x"}}, "routes": [{"to": ["a"], "event": ["x"]}]}, "unknown events ['x']"),
        ({"destinations": {}, "route": []}, "unknown top-level keys ['route']"),
    ],
)  # fmt: skip
def test_routing_file_mistakes_are_named(doc: dict, message: str) -> None:
    with pytest.raises(RoutingError, match=message.replace("[", r"\[").replace("(", r"\(")):
        parse_file(doc, environ={})


def test_every_matching_route_contributes_its_destinations() -> None:
    routing = parse_file(
        {
            "destinations": {
                n: {"url": f"http://{n}.example"} for n in ("team", "oncall", "owner")
            },
            "routes": [
                {"owner": ["finance", "legal"], "to": ["owner"]},
                {"service": "support", "to": ["team"]},
                {"event": "run_stuck", "to": ["oncall", "team"]},
            ],
        },
        environ={},
    )
    assert routing.destinations_for(sc.NOTIFY_APPROVAL_OVERDUE, "finance", "support") == [
        "owner",
        "team",
    ]
    assert routing.destinations_for(sc.NOTIFY_RUN_STUCK, None, "support") == ["team", "oncall"]
    assert routing.destinations_for(sc.NOTIFY_RUN_LOOPING, None, "billing") == []
