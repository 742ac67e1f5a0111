"""`handoffscope dashboard`'s flags, their environment variables, and what it execs.

The exec itself (a real Streamlit server) is exercised by test_browser.py; here the
argument handling is checked on the real parser, without starting a server.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from handoffscope.dashboard import cli
from handoffscope.dashboard.config import ENV_API, ENV_TOKEN, SETTINGS, render_markdown_table


def test_help_lists_every_flag_with_its_env_var():
    out = subprocess.run(
        [sys.executable, "-m", "handoffscope.dashboard.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for s in SETTINGS:
        assert s.env_var in out
        if s.flag:
            assert s.flag in out
    assert ENV_TOKEN in out


def test_flags_fall_back_to_env_then_default(monkeypatch):
    for s in SETTINGS:
        monkeypatch.delenv(s.env_var, raising=False)
    args = cli.build_parser().parse_args([])
    assert (args.api, args.port, args.host) == ("http://127.0.0.1:4318", 8501, "127.0.0.1")

    monkeypatch.setenv("HANDOFFSCOPE_PORT", "9000")
    monkeypatch.setenv("HANDOFFSCOPE_API", "http://collector:4318")
    args = cli.build_parser().parse_args([])
    assert (args.api, args.port) == ("http://collector:4318", 9000)
    # The command line wins over the environment.
    assert cli.build_parser().parse_args(["--port", "9100"]).port == 9100


def test_bad_port_in_env_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.setenv("HANDOFFSCOPE_PORT", "eighty")
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args([])
    assert exc.value.code == 2
    assert "eighty" in capsys.readouterr().err


def test_api_must_be_http(capsys):
    assert cli.main(["--api", "collector:4318"]) == 2
    assert "--api must be an http(s) URL" in capsys.readouterr().err


def test_streamlit_command_is_headless_bound_and_passes_api_and_token_by_env(monkeypatch):
    monkeypatch.setenv(ENV_TOKEN, "s3cret")
    argv, env = cli.streamlit_command("http://10.0.0.5:4318/", 8600, "0.0.0.0")
    assert argv[1:4] == ["-m", "streamlit", "run"]
    assert argv[4] == str(cli.APP) and cli.APP.is_file()
    opts = dict(zip(argv[5::2], argv[6::2], strict=True))
    assert argv.count("--server.allowedHosts") == 3  # the loopback names by default
    assert opts["--server.port"] == "8600"
    assert opts["--server.address"] == "0.0.0.0"
    assert opts["--server.headless"] == "true"
    assert opts["--browser.gatherUsageStats"] == "false"
    assert env[ENV_API] == "http://10.0.0.5:4318"
    assert env[ENV_TOKEN] == "s3cret"
    assert "s3cret" not in " ".join(argv)


def test_every_setting_is_documented():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "dashboard.md").read_text()
    block = re.search(
        r"<!-- dashboard-settings:begin -->\n(.*?)<!-- dashboard-settings:end -->", doc, re.S
    )
    assert block, "docs/dashboard.md lost its dashboard-settings markers"
    assert block.group(1) == render_markdown_table()
    for s in SETTINGS:
        assert f"`{s.env_var}`" in doc and s.shown_default in doc, s.name
        if s.flag:
            assert f"`{s.flag}`" in doc, s.name
    assert f"`{ENV_TOKEN}`" in doc


def test_allowed_hosts_become_streamlits_allowed_hosts() -> None:
    assert cli.allowed_hosts("Board.example, *.corp.example", "10.0.0.7") == [
        "board.example",
        "*.corp.example",
        "10.0.0.7",
    ]
    assert cli.allowed_hosts("localhost", "0.0.0.0") == ["localhost"]
    argv, _ = cli.streamlit_command("http://127.0.0.1:4318", 8501, "127.0.0.1", ["a", "b"])
    given = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--server.allowedHosts"]
    assert given == ["a", "b"]


def test_trace_link_is_a_url_template_passed_to_the_app(capsys) -> None:
    from handoffscope.dashboard.config import ENV_TRACE_LINK

    template = "http://jaeger.example:16686/trace/{trace_id}"
    args = cli.parse_args(["--trace-link", template], environ={})
    assert args.trace_link == template
    _, env = cli.streamlit_command(args.api, args.port, args.host, trace_link=args.trace_link)
    assert env[ENV_TRACE_LINK] == template
    for bad in ("http://jaeger.example/trace/", "javascript:alert(1)//{trace_id}"):
        with pytest.raises(SystemExit):
            cli.parse_args(["--trace-link", bad], environ={})
        assert "{trace_id}" in capsys.readouterr().err
