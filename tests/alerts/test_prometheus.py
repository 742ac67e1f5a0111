"""Real Prometheus scrapes a seeded collector, fires the stuck-run and overdue-approval
alerts from deploy/prometheus/alerts.yml, and real Alertmanager posts them to a local
receiver.

Debian's binaries (`prometheus`, `prometheus-alertmanager`; .ci/run installs them) run on
free ports in the test's temp dir. Only the timings differ from the shipped files, so the
test takes seconds: scrape and evaluation every second, Alertmanager's group waits of a
second, and each rule's `for` set to 0s (the `for` durations themselves are covered by
promtool's unit tests, test_rules.py). The expressions, labels and annotations are the
shipped ones, read from alerts.yml.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from alerts_support import Daemon, need_binary, until
from support.evidence import Run, S
from support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "alerts.yml"
WANTED = {"HandoffscopeRunsStuck", "HandoffscopeApprovalOverdue"}


@pytest.fixture
def stack(tmp_path: Path) -> Any:
    started: list[Daemon] = []

    def start(collector: Any, receiver: Any) -> tuple[Daemon, Daemon]:
        prometheus = need_binary("prometheus")
        alertmanager = need_binary("prometheus-alertmanager")
        am_port, prom_port = free_port(), free_port()
        (tmp_path / "am.yml").write_text(
            yaml.safe_dump(
                {
                    "route": {
                        "receiver": "hook",
                        "group_by": ["alertname", "service"],
                        "group_wait": "1s",
                        "group_interval": "1s",
                        "repeat_interval": "1h",
                    },
                    "receivers": [{"name": "hook", "webhook_configs": [{"url": receiver.url}]}],
                }
            )
        )
        am = Daemon(
            "alertmanager",
            [
                alertmanager,
                "--config.file=am.yml",
                f"--storage.path={tmp_path / 'am-data'}",
                f"--web.listen-address=127.0.0.1:{am_port}",
                "--cluster.listen-address=",  # one instance: no gossip port
            ],
            f"http://127.0.0.1:{am_port}",
            tmp_path,
        )
        started.append(am)
        rules = yaml.safe_load(RULES.read_text())
        for group in rules["groups"]:
            for rule in group["rules"]:
                rule["for"] = "0s"
        (tmp_path / "alerts.yml").write_text(yaml.safe_dump(rules))
        target = collector.http_endpoint.removeprefix("http://")
        (tmp_path / "prometheus.yml").write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": ["alerts.yml"],
                    "alerting": {
                        "alertmanagers": [
                            {"static_configs": [{"targets": [f"127.0.0.1:{am_port}"]}]}
                        ]
                    },
                    "scrape_configs": [
                        {
                            "job_name": "handoffscope",
                            "metrics_path": "/metrics",
                            "static_configs": [{"targets": [target]}],
                        }
                    ],
                }
            )
        )
        prom = Daemon(
            "prometheus",
            [
                prometheus,
                "--config.file=prometheus.yml",
                f"--storage.tsdb.path={tmp_path / 'prom-data'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
            ],
            f"http://127.0.0.1:{prom_port}",
            tmp_path,
        )
        started.append(prom)
        return prom, am

    yield start
    for d in reversed(started):
        d.close()


def firing(prom: Daemon) -> set[tuple[str, str]]:
    got = prom.get("/api/v1/alerts")
    if not got:
        return set()
    return {
        (a["labels"]["alertname"], a["labels"].get("service", ""))
        for a in got["data"]["alerts"]
        if a["state"] == "firing"
    }


def posted(receiver: Any) -> set[tuple[str, str, str]]:
    return {
        (a["labels"]["alertname"], a["labels"].get("service", ""), a["status"])
        for p in receiver.snapshot()
        for a in p.json()["alerts"]
    }


def test_stuck_and_overdue_alerts_fire_and_reach_alertmanager_receiver(
    collector_factory, otlp_sender_factory, receiver, stack
) -> None:
    collector = collector_factory(args=["--grace-seconds", "1"])
    sender = otlp_sender_factory(collector, service="support")
    now = time.time_ns()
    r = Run(sender, "stuck-run", now - 120 * S)
    r.started()
    r.handoff("h1", "triage", "billing")
    r = Run(sender, "overdue-run", now - 60 * S)
    r.started()
    r.handoff("h1", "triage", "refunds")
    r.wait("h1", deadline=now - 30 * S, at=0.2)
    assert sender.send().name == "SUCCESS"

    prom, am = stack(collector, receiver)
    got = until(lambda: firing(prom), lambda f: {(a, "support") for a in WANTED} <= f, timeout=90)
    assert ("HandoffscopeCollectorDown", "") not in got  # it is up and scraped
    until(
        lambda: posted(receiver),
        lambda p: {(a, "support", "firing") for a in WANTED} <= p,
        timeout=90,
    )
    # Any post may also carry other alerts (the first one, say, only a rule that fired
    # earlier): take a wanted alert from whichever post has one.
    alert = next(
        a
        for p in receiver.snapshot()
        for a in p.json()["alerts"]
        if a["labels"]["alertname"] in WANTED
    )
    assert alert["labels"]["severity"] in ("page", "notify")
    assert "support" in alert["annotations"]["summary"]
