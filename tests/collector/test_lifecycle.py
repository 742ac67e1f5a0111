"""The collector as a process: restart keeps data, clean shutdown on SIGTERM and Ctrl-C,
one owner per file, retention, settings from environment variables.

On either store (`--store`, tests/conftest.py); one owner per file and the file named by
an environment variable are the DuckDB file's own (`duckdb_only`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from ingest_support import encode, handoff, read_db, span_keys
from opentelemetry.sdk.trace.export import SpanExportResult
from support.stores import is_dsn

from handoffscope.instrumentation import semconv as sc

DAY_NS = 86_400 * 10**9


def test_restart_keeps_every_span_and_still_deduplicates(collector, otlp_sender_factory) -> None:
    sender = otlp_sender_factory(collector, "http")
    for i in range(3):
        handoff(sender, f"run-restart-{i}")
    before = sender.pending()
    assert sender.send() is SpanExportResult.SUCCESS

    collector.restart()
    assert "spans=6" in collector.log()
    assert collector.healthz()["spans_stored"] == 6
    # A retry of the pre-restart export is still recognised: the check reads the table.
    assert sender.send(before) is SpanExportResult.SUCCESS
    handoff(sender, "run-after-restart")
    assert sender.send() is SpanExportResult.SUCCESS
    assert collector.healthz()["spans_stored"] == 8
    assert collector.metric("handoffscope_spans_duplicate_total") == 6

    assert collector.stop() == 0
    stored = read_db(collector.store, "SELECT trace_id, span_id FROM spans")
    assert len(stored) == 8 and set(stored) == span_keys(sender.sent)


def test_sigterm_and_ctrl_c_flush_and_close_the_file(collector, otlp_sender_factory) -> None:
    for sig in (signal.SIGTERM, signal.SIGINT):
        sender = otlp_sender_factory(collector, "grpc")
        handoff(sender, f"run-{sig.name}")
        assert sender.send() is SpanExportResult.SUCCESS
        assert collector.stop(sig) == 0, collector.log()
        if is_dsn(collector.store):
            assert "connections closed" in collector.output[-1]
        else:
            assert "file closed" in collector.output[-1]
            # Checkpointed on close: the write-ahead log is folded into the file.
            assert not collector.db_path.with_name(collector.db_path.name + ".wal").exists()
        if sig is signal.SIGTERM:
            collector.start()
    assert read_db(collector.store, "SELECT count(*) FROM spans") == [(4,)]


def test_the_collector_process_never_loads_pandas(collector, otlp_sender_factory) -> None:
    """pyarrow would import pandas (installed here, with the dashboard) on its first list
    conversion: seconds of start-up and tens of MB for nothing the collector uses. The
    process's own memory map says whether any of pandas' libraries were loaded, after
    real ingest, judging and queries."""
    sender = otlp_sender_factory(collector, "http")
    handoff(sender, "run-nopandas")
    assert sender.send() is SpanExportResult.SUCCESS
    assert collector.run("run-nopandas", until=lambda r: len(r["handoffs"]) == 1)["handoffs"]
    collector.get("/api/v1/review/weekly", format="csv").raise_for_status()
    collector.api("/api/v1/edges")
    maps = Path(f"/proc/{collector.proc.pid}/maps").read_text()
    assert "/pandas/" not in maps
    assert "/pyarrow/" in maps  # the check itself can see a package's libraries


@pytest.mark.duckdb_only("DuckDB's file lock; collectors share a PostgreSQL database by design")
def test_second_collector_on_the_same_file_is_refused_clearly(collector) -> None:
    other = subprocess.run(
        [
            sys.executable,
            "-m",
            "handoffscope.collector",
            "--db",
            str(collector.db_path),
            "--http-port",
            "0",
            "--grpc-port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert other.returncode == 2
    assert "in use by another process" in other.stderr
    assert collector.healthz()["status"] == "ok"  # the owner is unaffected


def test_retention_deletes_spans_that_ended_long_ago(
    collector_factory, otlp_sender_factory
) -> None:
    collector = collector_factory(args=["--retention-days", "0"])  # 0 keeps everything
    sender = otlp_sender_factory(collector, "http")
    old_end = time.time_ns() - 40 * DAY_NS
    old = sender.emit(
        sc.SPAN_REQUEST,
        {sc.RUN_ID: "run-old", sc.HANDOFF_ID: "h1"},
        start_time=old_end - 10**6,
        end_time=old_end,
    )
    handoff(sender, "run-new")
    assert sender.send() is SpanExportResult.SUCCESS
    assert collector.healthz()["spans_stored"] == 3

    collector.restart(args=["--retention-days", "0"])
    assert collector.healthz()["spans_stored"] == 3
    collector.restart(args=["--retention-days", "30"])  # retention runs at start
    assert collector.healthz()["spans_stored"] == 2

    assert collector.stop() == 0
    stored = set(read_db(collector.store, "SELECT trace_id, span_id FROM spans"))
    assert stored == span_keys([s for s in sender.sent if s is not old])


@pytest.mark.duckdb_only("HANDOFFSCOPE_DB names a DuckDB file; the store is not exercised")
def test_settings_come_from_environment_variables_alone(tmp_path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        grpc_port = probe.getsockname()[1]
    db = tmp_path / "from-env.duckdb"
    proc = subprocess.Popen(
        [sys.executable, "-m", "handoffscope.collector"],  # no flags at all
        env={
            **os.environ,
            "HANDOFFSCOPE_DB": str(db),
            "HANDOFFSCOPE_HTTP_PORT": "0",
            "HANDOFFSCOPE_GRPC_PORT": str(grpc_port),
            "HANDOFFSCOPE_TOKEN": "t",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
    )
    try:
        line = ""
        while "ready" not in line:
            line = proc.stdout.readline()
            assert line, "collector exited before its startup line"
        assert f"grpc=127.0.0.1:{grpc_port}" in line
        assert f"db={db.resolve()}" in line
        assert "auth=on" in line
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 0
    assert db.exists()


def test_every_acknowledged_export_survives_a_sigterm_under_load(
    collector, otlp_sender_factory
) -> None:
    import httpx

    recorder = otlp_sender_factory(collector, "http")
    exports = []
    for i in range(400):
        handoff(recorder, f"run-load-{i}")
        spans = recorder.take()
        exports.append((encode(spans), span_keys(spans)))
    acked: list[set] = []
    started = threading.Event()

    def post(chunk) -> None:
        with httpx.Client(timeout=30) as client:
            for body, keys in chunk:
                try:
                    response = client.post(
                        collector.http_endpoint + "/v1/traces",
                        content=body,
                        headers={"Content-Type": "application/x-protobuf"},
                    )
                except httpx.HTTPError:
                    return  # the collector has stopped listening
                if response.status_code == 200:
                    acked.append(keys)
                    started.set()

    threads = [threading.Thread(target=post, args=(exports[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    assert started.wait(60)
    assert collector.stop() == 0, collector.log()
    for t in threads:
        t.join()
    stored = set(read_db(collector.store, "SELECT trace_id, span_id FROM spans"))
    promised = set().union(*acked)
    assert promised and promised <= stored  # a 200 meant durable, shutdown or not


def test_the_collector_writes_the_store_the_run_asked_for(collector, pytestconfig) -> None:
    # `--store postgresql` must reach the collector, or the suites it re-runs would test
    # the DuckDB file twice (tests/conftest.py, support/stores.py).
    ready = next(line for line in collector.output if "collector ready" in line)
    if pytestconfig.getoption("--store") == "postgresql":
        assert is_dsn(collector.store)
        assert f"store={collector.store} " in ready  # the database, no password in it
        assert collector.query("SELECT count(*) FROM judge_work") == [(0,)]  # PG's own table
    else:
        assert f"db={collector.db_path.resolve()} " in ready
