"""What a new user meets first: `handoffscope --version`, a taken port said in words, and
one grace default shared by the collector, the demo and the docs."""

from __future__ import annotations

import re
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from handoffscope import demo
from handoffscope.collector.config import CollectorConfig

ROOT = Path(__file__).resolve().parents[2]


def _handoffscope(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "handoffscope.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_version_names_each_installed_part() -> None:
    done = _handoffscope("--version")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"handoffscope {metadata.version('handoffscope')}"
    for part in ("instrumentation", "collector", "dashboard"):
        name = f"handoffscope-{part}"
        assert f"  {name} {metadata.version(name)}" in lines
    assert _handoffscope("-V").stdout == done.stdout
    assert "--version" in _handoffscope("--help").stdout


def test_demo_says_which_port_is_taken_and_how_to_choose_another() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _handoffscope(
            "demo", "--http-port", str(port), "--no-dashboard", "--duration", "1",
            "--backfill-weeks", "0", "--db", "unused.duckdb",
        )  # fmt: skip
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1" in done.stderr
    assert "already in use" in done.stderr and "--http-port" in done.stderr
    assert "see its log" not in done.stderr


def test_one_grace_default_for_collector_demo_and_docs(monkeypatch) -> None:
    monkeypatch.delenv("HANDOFFSCOPE_GRACE_SECONDS", raising=False)
    grace = CollectorConfig.grace_seconds
    assert demo.parser().parse_args([]).grace_seconds == grace
    readme = (ROOT / "README.md").read_text()
    stated = {
        float(s)
        for s in re.findall(
            r"grace window \((?:`--grace-seconds`, default )?(\d+(?:\.\d+)?) s\)", readme
        )
    }
    assert stated == {grace}, stated
    settings = (ROOT / "docs" / "configuration.md").read_text()
    assert f"| `--grace-seconds` | `HANDOFFSCOPE_GRACE_SECONDS` | `{grace:g}` |" in settings
