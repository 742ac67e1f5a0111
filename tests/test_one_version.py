"""One release number: the four distributions carry the same version, and the code reads
it from the installed metadata rather than keeping a copy."""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

from handoffscope.instrumentation import recorder

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = (
    "pyproject.toml",
    *(f"{d}/pyproject.toml" for d in ("instrumentation", "collector", "dashboard")),
)


def test_every_distribution_has_the_same_version() -> None:
    versions = {p: tomllib.loads((ROOT / p).read_text())["project"]["version"] for p in PROJECTS}
    assert len(set(versions.values())) == 1, versions


def test_the_shim_reports_its_installed_version() -> None:
    assert recorder.__version__ == metadata.version("handoffscope-instrumentation")
