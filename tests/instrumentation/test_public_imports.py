"""Every `from handoffscope... import ...` that README.md, docs/ and examples/ show works.

The import paths users copy are the adapters' public surface (DESIGN §8); modules behind
them may move (the LangGraph adapter became a package), these lines may not break.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SOURCES += sorted((ROOT / "examples").glob("*.py"))
IMPORT = re.compile(r"^\s*from (handoffscope[\w.]*) import (\([^)]*\)|[^\n#]+)", re.M)


def _shown_imports() -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    for path in SOURCES:
        for module, names in IMPORT.findall(path.read_text()):
            names = re.sub(r"#[^\n]*", "", names).strip("() \n")
            for item in names.split(","):
                name = item.split(" as ")[0].strip()  # `semconv as sc`: the name imported
                if name:
                    found.append((path.relative_to(ROOT).as_posix(), module, name))
    return sorted(set(found))


SHOWN = _shown_imports()


def test_the_docs_show_the_adapter_imports() -> None:
    shown = {(module, name) for _, module, name in SHOWN}
    assert ("handoffscope.instrumentation.langgraph", "LangGraphInstrumentor") in shown
    assert ("handoffscope.instrumentation.langgraph", "wait_details") in shown
    assert ("handoffscope.instrumentation.openai_agents", "OpenAIAgentsInstrumentor") in shown
    assert ("handoffscope.instrumentation", "validate_contract") in shown


@pytest.mark.parametrize(("where", "module", "name"), SHOWN)
def test_shown_import_works(where: str, module: str, name: str) -> None:
    assert hasattr(importlib.import_module(module), name), f"{where}: from {module} import {name}"
