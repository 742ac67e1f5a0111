"""Fixtures for other instrumentations' spans (docs/foreign-spans.md).

Each test module drives real apps, traced by the REAL instrumentation packages with their
content capture on, in subprocesses (`run_apps`: each instrumentation registers itself
globally with its framework, so the test process must not carry them), into ONE real
collector per module (`module_collector`). A module seeds once, reads every answer it
will assert on through the query API, and checks the store for the sentinel last
(support.privacy.assert_content_free, which stops the collector). `run_apps` is in
foreign_support.py (a conftest is not a module tests can import by name).

The frameworks whose pins conflict with the project's (`framework_envs.FRAMEWORKS`) run
in envs of their own (framework_envs.py):

- `framework_env(name)` -> `FrameworkEnv` (tests/foreign/framework_envs.py): the cached uv env for
  a name of `FRAMEWORKS` (`adk`, `strands`, `maf`, ...), built on first use. If it cannot be built the test is
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from framework_envs import EnvUnavailable, FrameworkEnv, ensure_env

HERE = Path(__file__).resolve().parent
APP_TIMEOUT_S = 240.0
DRIVER_TIMEOUT_S = 300.0


@pytest.fixture(scope="module")
def module_collector(request: pytest.FixtureRequest, module_collector_factory: Any) -> Any:
    """One real collector subprocess for the whole module (with the module's
    `COLLECTOR_ARGS`, if it has any)."""
    return module_collector_factory(args=getattr(request.module, "COLLECTOR_ARGS", ()))


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
