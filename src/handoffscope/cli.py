"""`handoffscope`: the one command, dispatching to its parts.

    handoffscope collector ...   OTLP receiver, health engine, store, query API
    handoffscope api ...         the query API alone, over a store the collectors write
    handoffscope ack ...         acknowledge (silence) an alert through a collector's API
    handoffscope tokens ...      make, list and revoke credentials
    handoffscope dashboard ...   the Streamlit dashboard (reads the query API)
    handoffscope demo ...        a collector, a dashboard and scripted agent traffic
    handoffscope --version       the installed version of each part

Each subcommand has its own `--help`, and each of its flags also reads an environment
variable `HANDOFFSCOPE_<FLAG>`. A part is imported only when its subcommand runs, so
`handoffscope collector` does not load Streamlit and the dashboard does not load DuckDB.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from importlib import metadata

COMMANDS: dict[str, tuple[str, str]] = {
    "collector": (
        "handoffscope.collector.cli",
        "receive OTLP evidence, judge handoffs, store them, serve the query API",
    ),
    "api": (
        "handoffscope.collector.api_cli",
        "the query API alone over a store the collectors write (no ingest)",
    ),
    "ack": (
        "handoffscope.collector.ack_cli",
        "acknowledge (silence) a stuck run, a loop or an overdue wait; list or clear them",
    ),
    "tokens": (
        "handoffscope.collector.tokens_cli",
        "make, list and revoke credentials (ingest, read, admin; scoped to services)",
    ),
    "dashboard": ("handoffscope.dashboard.cli", "live board, run detail and weekly review"),
    "demo": ("handoffscope.demo", "collector + dashboard + scripted multi-agent traffic"),
}
"""subcommand -> (module with main(argv), one line of help)."""


DISTRIBUTIONS = (
    "handoffscope",
    "handoffscope-instrumentation",
    "handoffscope-collector",
    "handoffscope-dashboard",
)
"""The distributions a full install holds; a part installed alone still reports itself."""


def version() -> str:
    """ "handoffscope 0.1.0", then each installed part's version (or "not installed")."""
    found: dict[str, str] = {}
    for name in DISTRIBUTIONS:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    lines = [f"handoffscope {found.pop('handoffscope')}"]
    lines += [f"  {name} {v}" for name, v in found.items()]
    return "\n".join(lines)


def usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = [
        "usage: handoffscope <command> [options]",
        "",
        "Live health of agent-to-agent handoffs, without prompt content.",
        "",
        "commands:",
    ]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += [
        "",
        "Run `handoffscope <command> --help` for a command's options; "
        "`handoffscope --version` for the installed versions.",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage())
        return 0
    if args[0] in ("-V", "--version", "version"):
        print(version())
        return 0
    command, rest = args[0], args[1:]
    if command not in COMMANDS:
        print(f"handoffscope: unknown command {command!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module_name = COMMANDS[command][0]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only "the part is not installed" gets this message; a missing dependency
        # inside an installed part should surface as itself.
        if exc.name is None or not module_name.startswith(exc.name):
            raise
        print(
            f"handoffscope {command}: not available in this installation "
            f"({module_name} is missing); install the full `handoffscope` package",
            file=sys.stderr,
        )
        return 2
    return int(module.main(rest) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
