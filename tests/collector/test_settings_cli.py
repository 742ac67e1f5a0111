"""Settings are data, documented, and reachable as flags and environment variables;
the `handoffscope` command dispatches to its parts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from handoffscope.collector.config import (
    QUERY_SETTINGS,
    SETTINGS,
    CollectorConfig,
    parse_args,
    parse_query_args,
    render_markdown_table,
    render_query_table,
)

ROOT = Path(__file__).parents[2]
HANDOFFSCOPE = Path(sys.executable).with_name("handoffscope")


# README.md links to docs/configuration.md instead of repeating the table.
@pytest.mark.parametrize("doc_path", ["docs/configuration.md"])
def test_configuration_doc_is_the_rendered_table(doc_path: str) -> None:
    doc = (ROOT / doc_path).read_text()
    block = re.search(
        r"<!-- collector-settings:begin -->\n(.*?)<!-- collector-settings:end -->", doc, re.S
    )
    assert block, f"{doc_path} lost its collector-settings markers"
    assert block.group(1) == render_markdown_table()
    for s in SETTINGS:
        assert f"`{s.env_var}`" in block.group(1)
        if s.flag:
            assert f"`{s.flag}`" in block.group(1)


def test_api_settings_doc_is_the_rendered_table() -> None:
    doc = (ROOT / "docs/configuration.md").read_text()
    block = re.search(r"<!-- api-settings:begin -->\n(.*?)<!-- api-settings:end -->", doc, re.S)
    assert block, "docs/configuration.md lost its api-settings markers"
    assert block.group(1) == render_query_table()
    out = subprocess.run(
        [str(HANDOFFSCOPE), "api", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    for s in QUERY_SETTINGS:
        assert s.env_var in text and (not s.flag or s.flag in text)
    config = parse_query_args(
        ["--store", "postgresql://hs@db/hs"], environ={"HANDOFFSCOPE_HTTP_PORT": "9"}
    )
    assert (config.shared_store, config.http_port, config.grace_seconds) == (True, 9, 30.0)


def test_design_flags_exist_with_their_defaults() -> None:
    defaults = parse_args([], environ={})
    assert defaults == CollectorConfig()
    assert (defaults.db, defaults.host, defaults.http_port, defaults.grpc_port) == (
        "./handoffscope.duckdb",
        "127.0.0.1",
        4318,
        4317,
    )
    assert defaults.grace_seconds == 30 and defaults.retention_days == 30
    assert defaults.max_body_bytes == 16 * 1024 * 1024
    assert not defaults.auth


def test_each_flag_reads_its_env_var_and_the_flag_wins() -> None:
    samples = {
        "db": ("/tmp/x.duckdb", "/tmp/y.duckdb"),
        "store": ("postgresql://hs@db.example:5432/hs", "postgres://hs@other.example/hs"),
        "host": ("0.0.0.0", "::1"),
        "http_port": ("5000", "5001"),
        "grpc_port": ("6000", "6001"),
        "grace_seconds": ("5", "7.5"),
        "require_outcome": ("support-bot, billing", "*"),
        "max_handoffs_per_run": ("500", "20000"),
        "prices": ("/tmp/prices.toml", "/etc/handoffscope/prices.toml"),
        "judge": ("off", "On"),
        "judge_workers": ("2", "3"),
        "judge_nice": ("5", "0"),
        "max_hot_handoffs": ("500", "80000"),
        "retention_days": ("2", "0"),
        "max_body_bytes": ("1000", "2000"),
        "queue_batches": ("3", "4"),
        "ingest_log": ("off", "On"),
        "memory_limit": ("1GB", "2GB"),
        "max_inflight_bytes": ("20000000", "30000000"),
        "max_header_bytes": ("1000", "2000"),
        "max_connections": ("10", "20"),
        "max_grpc_connections": ("30", "40"),
        "idle_timeout_seconds": ("1", "2.5"),
        "header_timeout_seconds": ("3", "4.5"),
        "body_timeout_seconds": ("5", "6.5"),
        "allowed_hosts": ("a.example", "b.example,*.c.example"),
        "max_clock_skew_seconds": ("60", "0"),
        "metrics_max_services": ("5", "6"),
        "log_level": ("debug", "error"),
        "metrics_top": ("5", "7"),
        "notify": ("http://a.example/hook http://b.example/x#format=slack", "http://c.example/y"),
        "notify_config": ("/tmp/routes.json", "/tmp/other.json"),
        "notify_poll_seconds": ("1", "0.5"),
        "notify_stuck_factor": ("2", "4"),
        "notify_max_age_seconds": ("60", "0"),
        "dashboard_url": ("http://dash.example:8501", "https://dash.example"),
    }
    assert set(samples) == {s.name for s in SETTINGS if s.flag}
    for s in SETTINGS:
        if not s.flag:
            continue
        from_env, from_flag = samples[s.name]
        env = {s.env_var: from_env}
        if s.repeatable:  # whitespace-separated in the variable; the flag replaces them
            expected_env: object = tuple(s.type(v) for v in from_env.split())
            expected_flag: object = (s.type(from_flag),)
        else:
            expected_env, expected_flag = s.type(from_env), s.type(from_flag)
        assert getattr(parse_args([], environ=env), s.name) == expected_env, s.name
        flagged = parse_args([s.flag, from_flag], environ=env)
        assert getattr(flagged, s.name) == expected_flag, s.name
    token = parse_args([], environ={"HANDOFFSCOPE_TOKEN": "abc"})
    assert token.token == "abc" and token.auth
    secrets = parse_args(
        [], environ={"HANDOFFSCOPE_NOTIFY_SECRET": "k", "HANDOFFSCOPE_NOTIFY_TOKEN": "t"}
    )
    assert (secrets.notify_secret, secrets.notify_token) == ("k", "t")
    repeated = parse_args(["--notify", "http://a.example/1", "--notify", "http://b.example/2"])
    assert repeated.notify == ("http://a.example/1", "http://b.example/2")


def test_store_names_a_file_or_a_postgresql_database(capsys) -> None:
    assert parse_args([], environ={}).store_target == "./handoffscope.duckdb"
    file = parse_args(["--db", "/tmp/a.duckdb", "--store", "/tmp/b.duckdb"], environ={})
    assert (file.store_target, file.shared_store) == ("/tmp/b.duckdb", False)
    shared = parse_args(["--store", "postgresql://hs@db.example/hs"], environ={})
    assert (shared.store_target, shared.shared_store) == ("postgresql://hs@db.example/hs", True)
    for bad, why in [
        ("postgresql:hs@db", "postgresql://user@host:port/db"),
        ("mysql://db.example/hs", "DuckDB file path or postgresql://"),
    ]:
        with pytest.raises(SystemExit):
            parse_args(["--store", bad], environ={})
        assert why in capsys.readouterr().err


def test_inflight_budget_below_the_body_limit_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_args(["--max-body-bytes", "2000", "--max-inflight-bytes", "1000"], environ={})
    assert stopped.value.code == 2
    assert "--max-inflight-bytes (1000) must be at least --max-body-bytes (2000)" in (
        capsys.readouterr().err
    )


def test_judge_workers_without_the_worker_engine_is_refused(capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        parse_args(["--judge", "thread", "--judge-workers", "2"], environ={})
    assert stopped.value.code == 2
    assert "--judge-workers 2 needs --judge on" in capsys.readouterr().err
    assert parse_args(["--judge-workers", "2"], environ={}).judge_workers == 2
    assert parse_args(["--judge", "off"], environ={}).judge_workers == 1


def test_allowed_hosts_include_a_specific_bind_address() -> None:
    assert parse_args([], environ={}).host_names == ["localhost", "127.0.0.1", "::1"]
    bound = parse_args(["--host", "10.1.2.3", "--allowed-hosts", "Collector"], environ={})
    assert bound.host_names == ["collector", "10.1.2.3"]
    assert parse_args(["--host", "0.0.0.0"], environ={}).host_names == [
        "localhost",
        "127.0.0.1",
        "::1",
    ]


def test_bad_values_are_refused_with_the_reason(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_args(["--http-port", "70000"], environ={})
    assert exit_.value.code == 2
    assert "--http-port: must be a TCP port" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--http-port", "abc"], environ={})
    err = capsys.readouterr().err
    # One sentence a person reads: the flag named once, no Python "invalid literal".
    assert "argument --http-port: must be a whole number, got 'abc'" in err
    assert err.count("--http-port:") == 1
    with pytest.raises(SystemExit):
        parse_args([], environ={"HANDOFFSCOPE_QUEUE_BATCHES": "0"})
    assert "HANDOFFSCOPE_QUEUE_BATCHES" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse_args(["--judge-nice", "20"], environ={})
    assert "--judge-nice: must be a nice increment 0-19" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--http-port", "--grpc-port"])
def test_a_port_in_use_is_one_line_naming_its_flag_and_nothing_is_created(
    flag: str, tmp_path: Path
) -> None:
    import socket

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    other = "--grpc-port" if flag == "--http-port" else "--http-port"
    try:
        out = subprocess.run(
            [str(HANDOFFSCOPE), "collector", flag, str(port), other, "0", "--db", "h.duckdb"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
    finally:
        taken.close()
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert f"127.0.0.1:{port}" in lines[0] and f"choose another port with {flag}" in lines[0]
    assert list(tmp_path.iterdir()) == []  # no DuckDB file, no ingest log


def test_collector_help_lists_every_flag_and_variable() -> None:
    out = subprocess.run(
        [str(HANDOFFSCOPE), "collector", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())  # argparse wraps lines
    for s in SETTINGS:
        assert s.env_var in text
        if s.flag:
            assert s.flag in text


def test_handoffscope_command_dispatches() -> None:
    out = subprocess.run([str(HANDOFFSCOPE), "--help"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0
    for command in ("collector", "api", "dashboard", "demo"):
        assert re.search(rf"^\s+{command}\s", out.stdout, re.M), command
    out = subprocess.run(
        [str(HANDOFFSCOPE), "nonsense"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "unknown command 'nonsense'" in out.stderr
    out = subprocess.run(
        [str(HANDOFFSCOPE), "dashboard", "--help"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and "usage:" in out.stdout
