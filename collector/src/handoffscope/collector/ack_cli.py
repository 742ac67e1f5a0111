"""`handoffscope ack`: acknowledge (silence) a stuck run, a loop or an overdue wait.

    handoffscope ack run_looping run-42 --by alice --for 2h --note known_issue
    handoffscope ack approval_overdue run-7 --handoff h3 --by ops@example.com --until 2026-12-05T16:00:00Z
    handoffscope ack list            # the active ones;  --all: the last 200, ended ones too
    handoffscope ack clear run_looping run-42

While an acknowledgement is active the collector's notifier does not send the target's
event and /metrics' alert gauges leave it out (docs/alerts.md, "Acknowledge and
silence"). This command talks to a running collector's query API
(`POST/GET/DELETE /api/v1/acknowledgements`, docs/api.md): the collector owns the store
(a DuckDB file is locked by it), and a `handoffscope api` process serves it read-only.

`--api` (default `HANDOFFSCOPE_API`, else http://127.0.0.1:4318, the collector's default
port) and `--token` (default `HANDOFFSCOPE_TOKEN`) work as for the dashboard. Each run
prints one line saying what it did (or the list) and exits 0; a bad flag or an
unreachable API is one line on stderr and exit 2; an acknowledgement the collector
refuses (a bad value, an unknown run, nothing to clear) is its one-line reason and exit 1.
Standard library only, so it works wherever the `handoffscope` command is installed.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from handoffscope.collector.api_call import ApiRefused, ApiUnreachable, call
from handoffscope.instrumentation import semconv as sc

PROG = "handoffscope ack"
DEFAULT_API = "http://127.0.0.1:4318"
PATH = "/api/v1/acknowledgements"
EVENTS = (sc.NOTIFY_RUN_STUCK, sc.NOTIFY_RUN_LOOPING, sc.NOTIFY_APPROVAL_OVERDUE)
_DURATION = re.compile(r"^([0-9]+)([smhd]?)$")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
EXAMPLES = """examples:
  handoffscope ack run_looping run-42 --by alice --for 2h --note known_issue
  handoffscope ack approval_overdue run-7 --handoff h3 --by ops@example.com --until 2026-12-05T16:00:00Z
  handoffscope ack list [--all]
  handoffscope ack clear run_looping run-42
"""


class UsageError(Exception):
    """A bad flag or value: one line, exit 2."""


class Unreachable(Exception):
    """No answer from the API: one line, exit 2."""


class Refused(Exception):
    """The collector answered 4xx/5xx: its one-line reason, exit 1."""


class _Parser(argparse.ArgumentParser):
    # argparse prints the whole usage before its error; the contract is one line.
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def duration(raw: str) -> int:
    """`90`, `90s`, `15m`, `2h`, `1d` as seconds."""
    m = _DURATION.match(raw.strip())
    if not m:
        raise argparse.ArgumentTypeError(f"expected a duration like 15m, 2h or 1d, got {raw!r}")
    return int(m[1]) * _UNIT_S[m[2]]


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api",
        default=os.environ.get("HANDOFFSCOPE_API") or DEFAULT_API,
        help="the collector's base URL (HANDOFFSCOPE_API; default %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("HANDOFFSCOPE_TOKEN") or None,
        help="its bearer token (HANDOFFSCOPE_TOKEN)",
    )


def _parsers() -> dict[str, argparse.ArgumentParser]:
    fmt = argparse.RawDescriptionHelpFormatter
    ack = _Parser(
        prog=PROG,
        description="Acknowledge (silence) a stuck run, a loop or an overdue wait until a "
        "time: its notifications stop and /metrics' alert gauges leave it out meanwhile. "
        "Also: `handoffscope ack list [--all]`, `handoffscope ack clear EVENT RUN_ID`.",
        epilog=EXAMPLES,
        formatter_class=fmt,
    )
    ack.add_argument("event", choices=EVENTS, metavar="EVENT", help=", ".join(EVENTS))
    ack.add_argument("run_id", metavar="RUN_ID")
    ack.add_argument("--handoff", metavar="ID", help="the wait's handoff.id (approval_overdue)")
    ack.add_argument("--by", required=True, metavar="NAME", help="your handle or e-mail")
    when = ack.add_mutually_exclusive_group(required=True)
    when.add_argument("--for", dest="for_seconds", type=duration, metavar="DURATION",
                      help="how long: 15m, 2h, 1d (1 minute to 30 days)")  # fmt: skip
    when.add_argument("--until", metavar="ISO", help="until this UTC time (2026-12-05T16:00:00Z)")
    ack.add_argument("--note", default=sc.ACK_NOTES[0], choices=sc.ACK_NOTES, metavar="CODE",
                     help=", ".join(sc.ACK_NOTES) + " (default %(default)s)")  # fmt: skip
    _common(ack)
    listing = _Parser(prog=f"{PROG} list", description="List acknowledgements.", epilog=EXAMPLES,
                      formatter_class=fmt)  # fmt: skip
    listing.add_argument("--all", action="store_true", help="the last 200, ended ones too")
    _common(listing)
    clear = _Parser(prog=f"{PROG} clear", description="End an active acknowledgement now.",
                    epilog=EXAMPLES, formatter_class=fmt)  # fmt: skip
    clear.add_argument("event", choices=EVENTS, metavar="EVENT", help=", ".join(EVENTS))
    clear.add_argument("run_id", metavar="RUN_ID")
    clear.add_argument("--handoff", metavar="ID", help="the wait's handoff.id (approval_overdue)")
    _common(clear)
    return {"ack": ack, "list": listing, "clear": clear}


def _request(
    args: argparse.Namespace, method: str, query: dict[str, Any] | None = None, body: Any = None
) -> tuple[int, Any]:
    try:
        return call(args.api, PATH, method, args.token, query=query, body=body)
    except ApiRefused as exc:
        raise Refused(f"{method} {PATH}: {exc.status}: {exc.reason}") from None
    except ApiUnreachable as exc:
        if str(exc).startswith("--api"):
            raise UsageError(str(exc)) from None
        raise Unreachable(str(exc)) from None


def _describe(a: dict[str, Any]) -> str:
    target = f"{a['event']} of run {a['run_id']}"
    if a.get("handoff_id"):
        target += f" (handoff {a['handoff_id']})"
    return target


def acknowledge(args: argparse.Namespace) -> str:
    body = {
        "event": args.event,
        "run_id": args.run_id,
        "handoff_id": args.handoff,
        "by": args.by,
        "until": args.until,
        "for_seconds": args.for_seconds,
        "note": args.note,
    }
    _, a = _request(args, "POST", body=body)
    return f"acknowledged {_describe(a)} by {a['by']} until {a['until']} ({a['note']})"


def list_acks(args: argparse.Namespace) -> str:
    _, body = _request(args, "GET", {"active": "false" if args.all else "true"})
    acks = body["acknowledgements"]
    if not acks:
        return "no acknowledgements" if args.all else "no active acknowledgements"
    lines = []
    for a in acks:
        state = (
            "active" if a["active"] else ("cleared " + a["cleared"] if a["cleared"] else "expired")
        )
        lines.append(f"{_describe(a)}: by {a['by']} until {a['until']} ({a['note']}; {state})")
    return "\n".join(lines)


def clear(args: argparse.Namespace) -> str:
    query = {"event": args.event, "run_id": args.run_id, "handoff_id": args.handoff}
    _request(args, "DELETE", query)
    target = {"event": args.event, "run_id": args.run_id, "handoff_id": args.handoff}
    return f"cleared the acknowledgement of {_describe(target)}: it alerts again"


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parsers = _parsers()
    command = args_list[0] if args_list and args_list[0] in ("list", "clear") else "ack"
    rest = args_list[1:] if command != "ack" else args_list
    try:
        args = parsers[command].parse_args(rest)
        if command == "ack" and args.for_seconds is not None and args.for_seconds <= 0:
            raise UsageError("--for: must be more than 0")
        run = {"ack": acknowledge, "list": list_acks, "clear": clear}[command]
        print(run(args), flush=True)
    except UsageError as exc:
        print(f"{parsers[command].prog}: {exc} (see --help)", file=sys.stderr)
        return 2
    except Unreachable as exc:
        print(f"{parsers[command].prog}: {exc}", file=sys.stderr)
        return 2
    except Refused as exc:
        print(f"{parsers[command].prog}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
