"""The collector's imports run down: no module reaches back up into one that imports it.

Every `import` in every module of `handoffscope.collector` counts — at the top or inside
a function (a function-level import hides a circle from the interpreter, not from a
reader). A circle means two modules that cannot be read, changed or tested apart; the one
this test was written against ran cli -> server -> engine/shards -> engine/worker -> cli.
"""

from __future__ import annotations

import ast
from pathlib import Path

import handoffscope.collector as collector

ROOT = Path(collector.__file__).parent
PACKAGE = "handoffscope.collector"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join([PACKAGE, *parts])


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """Modules of the collector that `path` imports (a package import names its __init__)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            # `from pkg import mod` imports the module pkg.mod; `from mod import name`, mod
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                for alias in node.names
            ]
        else:
            continue
        for target in targets:
            # importing a.b.c runs a/__init__ and a/b/__init__ too; those are package
            # plumbing, not a dependency of this module's meaning, so only the target counts
            if target in known and target != name:
                found.add(target)
    return found


def graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in ROOT.rglob("*.py")}
    known = set(paths)
    return {name: imports(path, name, known) for name, path in paths.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_collector_has_no_import_circle() -> None:
    edges = graph()
    assert len(edges) > 50  # the walk found the package
    assert cycles(edges) == []


def test_the_circle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
