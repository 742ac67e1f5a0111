"""Virtual environments of their own for the frameworks whose pins conflict with the project's.

Google ADK, Strands Agents and AutoGen each pin OpenTelemetry, protobuf or pydantic at
versions the project's `constraints.txt` does not admit (measured: each needed an environment
of its own); Semantic Kernel pins `mcp<2`; Microsoft Agent Framework, Pydantic AI, Agno and
smolagents instrument the process globally, so their drivers run apart too. Rather than loosen the project's pins, each framework gets a virtualenv built
by `uv` from `tests/foreign/envs/<name>/requirements.txt` (exact pins, compiled from the
`requirements.in` beside it with `uv pip compile --python-version 3.11`), and its scenario
driver (`tests/foreign/envs/<name>/scenario.py`) runs with that env's python.

Cache: `$HANDOFFSCOPE_TEST_ENV_CACHE` (default `~/.cache/handoffscope/test-envs`) holds one
env per `<name>-<key>`, the key a hash of the requirements file, the Python version and this
module's build recipe, so an edited pin (or another Python) builds a new env and an unchanged
one is reused. An env is built in a temporary directory and renamed into place only when
complete, so an interrupted build never leaves a half env that looks finished; concurrent
builders (pytest-xdist, two worktrees) race on the rename and the loser uses the winner's.

An env whose driver needs the project's own code (an adapter of `instrumentation/`) lists
repo-relative paths in an optional `tests/foreign/envs/<name>/local.txt`, one a line; each is
installed editable with `--no-deps` after the pins (its dependencies must be pinned in
`requirements.txt`), so the driver runs the working tree's code. The key then also covers
that file and the repository's path (an editable install points into one checkout); envs
without it keep their keys.

If an env cannot be built (no `uv`, no registry), `EnvUnavailable` says why with uv's own
output; the fixture skips on a workstation and FAILS under `CI`, where the registries are
there and a skip would hide a broken requirements file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ENVS_DIR = Path(__file__).parent / "envs"
REPO = Path(__file__).resolve().parents[2]
CACHE_ENV_VAR = "HANDOFFSCOPE_TEST_ENV_CACHE"
# Bump when the way an env is built changes (flags below), so old cached envs are not reused.
RECIPE = "uv-venv-1"
BUILD_TIMEOUT_S = 900.0
LOCAL_FILE = "local.txt"
FRAMEWORKS = (
    "adk",
    "strands",
    "autogen",
    "semantic_kernel",
    "pydantic_ai",
    "agno",
    "maf",
    "smolagents",
    "crewai",
    "llama_index",
)


class EnvUnavailable(RuntimeError):
    """A framework env could not be built; the message says why (with uv's output)."""


@dataclass(frozen=True)
class FrameworkEnv:
    name: str
    path: Path
    built_in_s: float  # 0.0 when taken from the cache
    envs_dir: Path = ENVS_DIR

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def scenario(self) -> Path:
        return self.envs_dir / self.name / "scenario.py"


def cache_root() -> Path:
    configured = os.environ.get(CACHE_ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "handoffscope" / "test-envs"


def requirements(name: str, envs_dir: Path = ENVS_DIR) -> Path:
    path = envs_dir / name / "requirements.txt"
    if not path.is_file():
        raise EnvUnavailable(f"no requirements file for {name!r}: {path}")
    return path


def env_key(name: str, envs_dir: Path = ENVS_DIR, python: str = sys.executable) -> str:
    version = f"{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
    digest = hashlib.sha256()
    digest.update(RECIPE.encode())
    digest.update(version.encode())
    digest.update(str(Path(python).resolve()).encode())
    digest.update(requirements(name, envs_dir).read_bytes())
    local = envs_dir / name / LOCAL_FILE
    if local.is_file():
        digest.update(str(REPO).encode())
        digest.update(local.read_bytes())
    return digest.hexdigest()[:16]


def local_paths(name: str, envs_dir: Path = ENVS_DIR) -> list[Path]:
    """The repository paths `local.txt` asks to install editable (none without the file)."""
    local = envs_dir / name / LOCAL_FILE
    if not local.is_file():
        return []
    lines = (line.split("#", 1)[0].strip() for line in local.read_text().splitlines())
    return [REPO / line for line in lines if line]


def find_uv() -> str:
    """The project's uv (`make setup` installs it in .venv), else one on PATH."""
    beside = Path(sys.executable).parent / "uv"
    if beside.is_file():
        return str(beside)
    found = shutil.which("uv")
    if found:
        return found
    raise EnvUnavailable("uv not found (run `make setup`, which installs it in .venv/bin)")


def _run(cmd: list[str], timeout: float) -> None:
    # An active venv or a UV_PYTHON in the developer's shell must not redirect the install;
    # the rest of uv's settings (UV_CACHE_DIR, an index mirror) are theirs to keep.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PYTHON")}
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=env, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise EnvUnavailable(f"timed out after {timeout:.0f}s: {' '.join(cmd)}") from exc
    if done.returncode != 0:
        raise EnvUnavailable(
            f"`{' '.join(cmd)}` exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )


def ensure_env(name: str, envs_dir: Path = ENVS_DIR) -> FrameworkEnv:
    """The cached env for `name`, building it first if there is none for this key."""
    reqs = requirements(name, envs_dir)
    root = cache_root()
    final = root / f"{name}-{env_key(name, envs_dir)}"
    if (final / ".complete").is_file():
        return FrameworkEnv(name, final, 0.0, envs_dir)
    uv = find_uv()
    root.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        _run([uv, "venv", "--quiet", "--python", sys.executable, str(staging)], 120)
        _run(
            [
                uv,
                "pip",
                "install",
                "--quiet",
                "--python",
                str(staging / "bin" / "python"),
                # Exactly the file's pins and nothing it does not list.
                "--no-deps",
                "-r",
                str(reqs),
            ],
            BUILD_TIMEOUT_S,
        )
        for path in local_paths(name, envs_dir):
            _run(
                [
                    uv,
                    "pip",
                    "install",
                    "--quiet",
                    "--python",
                    str(staging / "bin" / "python"),
                    "--no-deps",
                    "-e",
                    str(path),
                ],
                BUILD_TIMEOUT_S,
            )
        (staging / ".complete").write_text(reqs.read_text())
        try:
            staging.rename(final)
        except OSError:
            # Another builder finished first (the target exists): use theirs.
            if not (final / ".complete").is_file():
                raise
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return FrameworkEnv(name, final, time.monotonic() - started, envs_dir)
