"""Fixtures for other instrumentations' spans (docs/foreign-spans.md).

Each test module drives real apps, traced by the REAL instrumentation packages with their
content capture on, in subprocesses (`run_apps`: each instrumentation registers itself
globally with its framework, so the test process must not carry them), into ONE real
collector per module (`module_collector`). A module seeds once, reads every answer it
will assert on through the query API, and checks the store for the sentinel last
(`assert_content_free`, which stops the collector).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pytest

HERE = Path(__file__).resolve().parent
ROOT_CONFTEST = HERE.parent / "conftest.py"
APP_TIMEOUT_S = 240.0


def _root_conftest(config: pytest.Config) -> Any:
    """tests/conftest.py as pytest loaded it (both files are modules named `conftest`)."""
    return next(
        plugin
        for plugin in config.pluginmanager.get_plugins()
        if Path(getattr(plugin, "__file__", "") or "") == ROOT_CONFTEST
    )


@pytest.fixture(scope="module")
def module_collector(request: pytest.FixtureRequest, tmp_path_factory: Any) -> Iterator[Any]:
    """One real collector subprocess for the whole module."""
    root = _root_conftest(request.config)
    proc = root.CollectorProcess(tmp_path_factory.mktemp("collector")).start()
    yield proc
    proc.close()


def run_apps(commands: Mapping[str, Sequence[str]]) -> dict[str, dict[str, Any]]:
    """Run app scripts of this folder side by side; name -> the JSON line each printed.

    Side by side because each spends seconds importing its framework; the collector takes
    their exports concurrently as it would in production.
    """
    procs = {
        name: subprocess.Popen(
            [sys.executable, str(HERE / argv[0]), *argv[1:]],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, argv in commands.items()
    }
    out = {}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=APP_TIMEOUT_S)
        assert proc.returncode == 0, f"{name} failed:\n{stderr[-4000:]}"
        out[name] = json.loads(stdout.strip().splitlines()[-1])
    return out


def fetch_run(
    collector: Any,
    run_id: str,
    until: Callable[[dict[str, Any]], bool],
    timeout: float = 60.0,
) -> dict[str, Any]:
    """GET /api/v1/runs/{id} until `until(run)` holds (export and judging are asynchronous;
    not a timing assertion: after `timeout` the last answer is returned and the test's own
    assertions say what is missing)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        response = collector.get(f"/api/v1/runs/{run_id}")
        if response.status_code == 200:
            last = response.json()
            if until(last):
                return last
        if time.monotonic() > deadline:
            return last if last is not None else {"error": response.text}
        time.sleep(0.2)


def assert_content_free(collector: Any, answers: Sequence[Any], sentinel: str) -> None:
    """The sentinel is in no API answer, no byte of the DuckDB file (or its WAL), and no
    value of any table read back (DuckDB compresses strings on disk). Stops `collector`."""
    for path in ("/api/v1/runs", "/api/v1/handoffs", "/api/v1/edges", "/api/v1/live"):
        answers = [*answers, collector.api(path)]
    answers = [*answers, collector.api("/api/v1/drops"), collector.metrics_text()]
    for answer in answers:
        text = answer if isinstance(answer, str) else json.dumps(answer)
        assert sentinel not in text
    assert collector.stop() == 0
    db = Path(collector.db_path)
    for path in [db, *db.parent.glob(db.name + ".wal")]:
        assert sentinel.encode() not in path.read_bytes(), path
    con = duckdb.connect(str(db), read_only=True)
    try:
        dump = []
        for schema, table in con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
        ).fetchall():
            dump.append(repr(con.execute(f'SELECT * FROM "{schema}"."{table}"').fetchall()))
    finally:
        con.close()
    text = "\n".join(dump)
    assert "billing" in text  # the dump does show stored strings
    assert sentinel not in text
