"""`handoffscope demo`'s options: documented as declared, read from flags and variables."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from handoffscope.collector.config import CollectorConfig
from handoffscope.demo import parse_args
from handoffscope.demo.config import SETTINGS, DemoConfig, render_markdown_table

ROOT = Path(__file__).parents[2]
HANDOFFSCOPE = Path(sys.executable).with_name("handoffscope")


def test_configuration_doc_is_the_rendered_table() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    block = re.search(r"<!-- demo-settings:begin -->\n(.*?)<!-- demo-settings:end -->", doc, re.S)
    assert block, "docs/configuration.md lost its demo-settings markers"
    assert block.group(1) == render_markdown_table()


def test_help_lists_every_flag_and_variable() -> None:
    out = subprocess.run(
        [str(HANDOFFSCOPE), "demo", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    for s in SETTINGS:
        assert s.flag and s.flag in text and s.env_var in text, s.name


def test_defaults_and_the_collectors_grace() -> None:
    config = parse_args([], environ={})
    assert config == DemoConfig()
    assert config.grace_seconds == CollectorConfig().grace_seconds
    assert (config.http_port, config.no_dashboard, config.seed) == (4318, False, 0)


@pytest.mark.parametrize(("text", "expected"), [("1", True), ("true", True), ("0", False)])
def test_a_switch_reads_its_variable(text: str, expected: bool) -> None:
    assert parse_args([], environ={"HANDOFFSCOPE_NO_DASHBOARD": text}).no_dashboard is expected
    # The switch on the command line turns it on whatever the variable says.
    assert parse_args(["--no-dashboard"], environ={"HANDOFFSCOPE_NO_DASHBOARD": text}).no_dashboard


def test_variables_and_flags(capsys) -> None:
    env = {"HANDOFFSCOPE_RATE": "5", "HANDOFFSCOPE_DASHBOARD_PORT": "8601"}
    config = parse_args(["--rate", "7"], environ=env)
    assert (config.rate, config.dashboard_port) == (7.0, 8601)
    with pytest.raises(SystemExit) as stopped:
        parse_args([], environ={"HANDOFFSCOPE_TRAFFIC_ONLY": "maybe"})
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "HANDOFFSCOPE_TRAFFIC_ONLY='maybe'" in err and "1/true/yes/on" in err
    with pytest.raises(SystemExit):
        parse_args(["--http-port", "70000"], environ={})
    assert "--http-port: must be a TCP port" in capsys.readouterr().err
