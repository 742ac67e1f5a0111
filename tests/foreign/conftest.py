"""Fixtures for other instrumentations' spans (docs/foreign-spans.md).

Each test module drives real apps, traced by the REAL instrumentation packages with their
content capture on, in subprocesses (`run_apps`: each instrumentation registers itself
globally with its framework, so the test process must not carry them), into ONE real
collector per module (`module_collector`). A module seeds once, reads every answer it
will assert on through the query API, and checks the store for the sentinel last
(`assert_content_free`, which stops the collector).

The frameworks whose pins conflict with the project's (Google ADK, Strands, AutoGen) run
in envs of their own (framework_envs.py):

- `framework_env(name)` -> `FrameworkEnv` (tests/foreign/framework_envs.py): the cached uv env for
  `adk`, `strands` or `autogen`, built on first use. If it cannot be built the test is
  skipped on a workstation with uv's reason, and FAILS under `CI` (a skip there would hide a
  broken requirements file or a missing uv).
- `run_scenario(env, collector, scenario, extra_env=None)` -> `ScenarioRun`: runs that framework's real
  driver (`tests/foreign/envs/<name>/scenario.py SCENARIO`) with the env's python, exporting
  OTLP/HTTP protobuf to `collector`, with a fresh sentinel planted in its prompt, tool
  arguments, tool outputs and an exception message; returns the sentinel, the driver's
  `SCENARIO-RESULT` account and its output. `extra_env` selects a variant of the
  framework's telemetry (another schema or convention version).
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
from framework_envs import EnvUnavailable, FrameworkEnv, ensure_env

HERE = Path(__file__).resolve().parent
ROOT_CONFTEST = HERE.parent / "conftest.py"
APP_TIMEOUT_S = 240.0
DRIVER_TIMEOUT_S = 300.0


def _root_conftest(config: pytest.Config) -> Any:
    """tests/conftest.py as pytest loaded it (both files are modules named `conftest`)."""
    return next(
        plugin
        for plugin in config.pluginmanager.get_plugins()
        if Path(getattr(plugin, "__file__", "") or "") == ROOT_CONFTEST
    )


@pytest.fixture(scope="module")
def module_collector(request: pytest.FixtureRequest, tmp_path_factory: Any) -> Iterator[Any]:
    """One real collector subprocess for the whole module (with the module's
    `COLLECTOR_ARGS`, if it has any)."""
    root = _root_conftest(request.config)
    args = getattr(request.module, "COLLECTOR_ARGS", ())
    proc = root.CollectorProcess(tmp_path_factory.mktemp("collector"), args=args).start()
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


@pytest.fixture(scope="session")
def framework_env() -> Any:
    built: dict[str, FrameworkEnv | str] = {}

    def get(name: str) -> FrameworkEnv:
        if name not in built:
            try:
                built[name] = ensure_env(name)
            except EnvUnavailable as exc:
                built[name] = str(exc)
        env = built[name]
        if isinstance(env, str):
            if os.environ.get("CI"):
                pytest.fail(f"cannot build the {name} test env under CI: {env}")
            pytest.skip(f"cannot build the {name} test env: {env}")
        return env

    return get


@dataclass(frozen=True)
class ScenarioRun:
    sentinel: str
    result: dict[str, Any]
    output: str


@pytest.fixture
def run_scenario() -> Any:
    def run(
        env: FrameworkEnv, collector: Any, scenario: str, extra_env: dict[str, str] | None = None
    ) -> ScenarioRun:
        sentinel = f"SENTINEL-{env.name}-{scenario}-{secrets.token_hex(12)}"
        # The driver's settings only: OTEL_*, PYTHON* or a venv from the developer's shell
        # must not change what the framework exports or which packages it imports.
        inherited = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OTEL_", "PYTHON", "HANDOFFSCOPE_")) and k != "VIRTUAL_ENV"
        }
        done = subprocess.run(
            [str(env.python), str(env.scenario), scenario],
            env={
                **inherited,
                "OTEL_EXPORTER_OTLP_ENDPOINT": collector.http_endpoint,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "HANDOFFSCOPE_SENTINEL": sentinel,
                "PYTHONUNBUFFERED": "1",
                **(extra_env or {}),
            },
            capture_output=True,
            text=True,
            timeout=DRIVER_TIMEOUT_S,
            check=False,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{env.name} driver exited {done.returncode}:\n{output}"
        lines = [line for line in done.stdout.splitlines() if line.startswith("SCENARIO-RESULT ")]
        assert len(lines) == 1, f"no SCENARIO-RESULT line from the {env.name} driver:\n{output}"
        result = json.loads(lines[0].removeprefix("SCENARIO-RESULT "))
        return ScenarioRun(sentinel, result, output)

    return run
