"""The README's install and instrument steps, followed in a throwaway virtualenv.

A newcomer copies two things from README.md: the `pip install` of "Install from a
clone" into their agent app's environment, and the two LangGraph lines of "Instrument
your app". This test reads both out of README.md — it does not keep a copy of them, so
a README edit that breaks either step fails here — and follows them the way a user
would:

1. a fresh `python -m venv` under tmp_path (nothing of this repository's .venv in it);
2. the README's app-side `pip install`, run from the repository root as the README says,
   with the target the README names for LangGraph (PyPI's index, as a user has it: the
   README pins nothing for the app side, so neither does the test);
3. a tiny LangGraph app in that venv: the README's lines verbatim, then the graph of
   the shipped offline example (`examples/langgraph_app.py`: two agents, scripted
   models, a handoff, an approval) invoked and resumed — sending to a real collector
   subprocess through `OTEL_EXPORTER_OTLP_ENDPOINT`, which the README says `configure()`
   reads, and flushed only by the SDK's own exit hook, as the README's lines leave it;
4. the run, read back through the collector's query API: the triage → billing handoff,
   healthy, the run completed with its outcome.

It needs PyPI and takes a minute or two (a venv, then pip resolving LangGraph), so it
runs with the foreign-framework envs in `make test-foreign`, not in `make test`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from handoffscope.instrumentation import semconv as sc

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
EXAMPLE = ROOT / "examples" / "langgraph_app.py"
PIP_TIMEOUT_S = 600
APP_TIMEOUT_S = 180


def _section(text: str, title: str) -> str:
    """The body of the README's `## title` section, up to the next `## `."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"README.md has no '## {title}' section"
    return m[1]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def app_install_command() -> list[str]:
    """The README's app-side `pip install` for LangGraph, as argv.

    The README writes one command for the Agents SDK with the LangGraph target as its
    trailing `# or "…"` comment; the test takes whichever target names `[langgraph]`
    and keeps every other word of the command as written.
    """
    section = _section(README.read_text(), "Install from a clone")
    assert "From the repository" in section and "root" in section, (
        "the README no longer says where to run pip from; the test runs it from the root"
    )
    lines = [
        line
        for block in _blocks(section, "bash")
        for line in block.splitlines()
        if line.startswith("pip install") and "instrumentation[" in line
    ]
    assert lines, "no `pip install ./instrumentation[...]` line under 'Install from a clone'"
    words = shlex.split(lines[0], comments=False)
    command, comment = (words, []) if "#" not in words else (
        words[: words.index("#")], words[words.index("#") + 1 :]
    )  # fmt: skip
    targets = [w for w in command + comment if "instrumentation[" in w]
    langgraph = [t for t in targets if "[langgraph]" in t]
    assert langgraph, f"the README's install line names no LangGraph target: {lines[0]!r}"
    return [langgraph[0] if "instrumentation[" in w else w for w in command]


def instrument_lines() -> str:
    """The README's LangGraph snippet: its code lines, with the `# ... as before` left out."""
    section = _section(README.read_text(), "Instrument your app")
    m = re.search(r"^\*\*LangGraph\*\*.*?^```python\n(.*?)^```", section, re.M | re.S)
    assert m, "no **LangGraph** python block under 'Instrument your app'"
    code = "\n".join(line for line in m[1].splitlines() if not line.lstrip().startswith("#"))
    assert "LangGraphInstrumentor" in code and "configure(" in code, code
    return code


# The app after the README's lines: the shipped example's graph (loaded from its file, so
# the code under test is the one users copy), run to the approval, resumed, verified.
APP = """
import importlib.util, json, sys
from langgraph.types import Command

spec = importlib.util.spec_from_file_location("langgraph_example", sys.argv[1])
example = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = example  # LangGraph reads the state's annotations through it
spec.loader.exec_module(example)

graph = example.build_app()
config = {"configurable": {"thread_id": "readme-ticket-1"}}
out = graph.invoke({"messages": [("user", "I was charged twice.")]}, config)
assert out.get("__interrupt__"), out
graph.invoke(Command(resume={"decision": "approved"}), config)
instrumentor = LangGraphInstrumentor()  # the process-wide one the README's line set up
instrumentor.record_outcome("refund_posted", True, receipt_id="rfnd-readme-1", config=config)
print(json.dumps({"run_id": instrumentor.run_id(config)}))
"""


def test_readme_commands_parse() -> None:
    """Fast, and in `make test` too: the README still has steps this test can follow."""
    argv = app_install_command()
    assert argv[:2] == ["pip", "install"]
    compile(instrument_lines(), "README.md", "exec")


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment a user's shell would have: none of this repository's venv or
    PYTHONPATH, so only what the README's pip step installed can be imported."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(extra)
    return env


@pytest.mark.foreign_env
@pytest.mark.slow
def test_readme_install_and_instrument_in_a_fresh_venv(
    tmp_path: Path, collector_factory: Any
) -> None:
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"

    argv = app_install_command()
    # `pip` is the venv's own pip; every other word is the README's.
    pip = [str(python), "-m", "pip", *argv[1:], "--disable-pip-version-check"]
    done = subprocess.run(
        pip,
        cwd=ROOT,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"{shlex.join(argv)} failed:\n{done.stderr[-4000:]}"

    collector = collector_factory()
    app = tmp_path / "app.py"
    app.write_text(instrument_lines() + "\n" + APP)
    ran = subprocess.run(
        [str(python), str(app), str(EXAMPLE)],
        cwd=tmp_path,  # not the repository: nothing importable from a checkout
        env=_clean_env(OTEL_EXPORTER_OTLP_ENDPOINT=collector.http_endpoint),
        capture_output=True,
        text=True,
        timeout=APP_TIMEOUT_S,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    run_id = json.loads(ran.stdout.strip().splitlines()[-1])["run_id"]

    # The package came from the venv, not from this checkout.
    where = subprocess.run(
        [str(python), "-c", "import handoffscope.instrumentation as m; print(m.__file__)"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(str(venv)), where

    run = collector.run(
        run_id, until=lambda r: r["status"] == sc.RUN_STATUS_COMPLETED and bool(r["outcomes"])
    )
    service = re.search(r'service_name="([^"]+)"', instrument_lines())
    assert service and run["service"] == service[1]
    assert (run["status"], run["verdict"], run["path"]) == (
        sc.RUN_STATUS_COMPLETED,
        sc.HEALTHY,
        ["triage", "billing"],
    )
    (handoff,) = run["handoffs"]
    assert (handoff["from_agent"], handoff["to_agent"], handoff["verdict"]) == (
        "triage",
        "billing",
        sc.HEALTHY,
    )
    listed = collector.api("/api/v1/runs", since=0, limit=10)
    assert [r["run_id"] for r in listed["runs"]] == [run_id]
