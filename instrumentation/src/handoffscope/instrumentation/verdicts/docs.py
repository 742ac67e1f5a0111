"""The verdict tables of the docs, rendered from `semconv.VERDICT_TABLE`.

Each document holds its table between `<!-- verdicts:<name>:begin -->` and
`<!-- verdicts:<name>:end -->`; a test keeps what is there equal to `render(name)`, so a
verdict's words change in one place. Print one with
`python -m handoffscope.instrumentation.verdicts.docs architecture` (or `semconv`,
`readme`).
"""

from __future__ import annotations

import sys

from .. import semconv as sc

TABLES = ("architecture", "semconv", "readme")
"""architecture: docs/architecture.md (the rules); semconv: docs/semconv.md (labels and
boundaries); readme: README.md (the failures, in a reader's words)."""


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def render(name: str) -> str:
    rows: list[str] = []
    for v in sc.VERDICT_TABLE:
        number = str(v.rule) if v.rule is not None else "—"
        if name == "architecture":
            rows.append(_row([number, f"`{v.name}`", v.fails_when, v.next_step]))
        elif name == "semconv":
            boundary = f"`{v.boundary}`" if v.boundary else "—"
            rows.append(_row([number, f"`{v.name}`", v.label, boundary, v.next_step]))
        elif name == "readme":
            if v.rule is not None:
                rows.append(_row([v.label, v.fails_when, v.next_step]))
            elif v.name == sc.UNVERIFIED:
                rows.append(_row([f"*{v.label}* (not a failure)", v.fails_when, v.next_step]))
        else:
            raise ValueError(f"no verdict table named {name!r}; one of {', '.join(TABLES)}")
    header = {
        "architecture": ["#", "verdict", "fails when", "safe next step"],
        "semconv": ["#", "verdict", "label", "boundary", "safe next step"],
        "readme": ["verdict", "fails when", "safe next step"],
    }[name]
    return "\n".join([_row(header), _row(["---"] * len(header)), *rows]) + "\n"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- verdicts:{name}:begin -->", f"<!-- verdicts:{name}:end -->"


if __name__ == "__main__":
    print(render(sys.argv[1] if len(sys.argv) > 1 else "architecture"), end="")
