"""`handoffscope tokens`: make, list and revoke credentials (docs/security.md).

    handoffscope tokens create --kind read --service support-bot support-dashboard
    handoffscope tokens create --kind ingest --service support-bot support-bot-app
    handoffscope tokens list
    handoffscope tokens revoke support-dashboard

Kinds: `ingest` (send spans, read nothing), `read` (query, send nothing), `admin` (both,
acknowledge alerts, manage credentials). `--service` (repeatable) scopes a credential to
those services. `create` prints the new token once — only its hash is kept.

Two ways in:

- through a running collector's API (`--api`, default `HANDOFFSCOPE_API`, else
  http://127.0.0.1:4318) with an admin credential (`--token`, default `HANDOFFSCOPE_TOKEN`):
  the way while a collector runs, since it holds its DuckDB file locked; the change takes
  effect at once there and within seconds on collectors sharing its PostgreSQL store;
- straight into a store no collector holds: `--db PATH` (a DuckDB file) or `--store
  postgresql://…` (`HANDOFFSCOPE_DB` / `HANDOFFSCOPE_STORE` are NOT read here, so a
  forgotten variable never sends a token to the wrong place).

One line (or the list) and exit 0; a bad flag or an unreachable API or store is one line on
stderr and exit 2; a refusal (a taken name, a wrong kind of credential, an unknown name) is
its one-line reason and exit 1.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any, NoReturn, TypeVar

from . import credentials as cr
from .api_call import ApiRefused, ApiUnreachable, call

T = TypeVar("T")
PROG = "handoffscope tokens"
DEFAULT_API = "http://127.0.0.1:4318"
PATH = "/api/v1/tokens"
EXAMPLES = """examples:
  handoffscope tokens create --kind read --service support-bot support-dashboard
  handoffscope tokens create --kind ingest --service support-bot support-bot-app
  handoffscope tokens list
  handoffscope tokens revoke support-dashboard
  handoffscope tokens list --db handoffscope.duckdb      # no collector running on it
"""


class UsageError(Exception):
    """A bad flag, an unreachable API or store: one line, exit 2."""


class Refused(Exception):
    """The collector or store said no: its one-line reason, exit 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _where(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api",
        default=os.environ.get("HANDOFFSCOPE_API") or DEFAULT_API,
        help="a running collector's base URL (HANDOFFSCOPE_API; default %(default)s)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("HANDOFFSCOPE_TOKEN") or None,
        help="an admin credential for --api (HANDOFFSCOPE_TOKEN)",
    )
    direct = parser.add_mutually_exclusive_group()
    direct.add_argument("--db", metavar="PATH", help="a DuckDB file no collector holds")
    direct.add_argument("--store", metavar="DSN", help="a PostgreSQL store: postgresql://…")


def _parsers() -> dict[str, argparse.ArgumentParser]:
    fmt = argparse.RawDescriptionHelpFormatter
    create = _Parser(
        prog=f"{PROG} create",
        description="Make a credential and print its token (once: only its hash is kept).",
        epilog=EXAMPLES,
        formatter_class=fmt,
    )
    create.add_argument("name", metavar="NAME", help="its name: 1-64 of A-Z a-z 0-9 _ . -")
    create.add_argument("--kind", required=True, choices=cr.KINDS, help=", ".join(cr.KINDS))
    create.add_argument(
        "--service",
        action="append",
        default=[],
        metavar="SERVICE",
        help="scope it to this service.name (repeatable; none: every service)",
    )
    _where(create)
    listing = _Parser(prog=f"{PROG} list", description="List every credential, revoked ones "
                      "too (names, kinds, services; never a token).", epilog=EXAMPLES,
                      formatter_class=fmt)  # fmt: skip
    _where(listing)
    revoke = _Parser(prog=f"{PROG} revoke", description="Revoke a credential now (no restart).",
                     epilog=EXAMPLES, formatter_class=fmt)  # fmt: skip
    revoke.add_argument("name", metavar="NAME")
    _where(revoke)
    top = _Parser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=EXAMPLES,
                  formatter_class=fmt)  # fmt: skip
    top.add_argument("command", choices=("create", "list", "revoke"))
    return {"create": create, "list": listing, "revoke": revoke, "tokens": top}


# --- through the API ---------------------------------------------------------------------


def _request(args: argparse.Namespace, method: str, path: str, body: Any = None) -> Any:
    try:
        return call(args.api, path, method, args.token, body=body)[1]
    except ApiRefused as exc:
        raise Refused(str(exc)) from None
    except ApiUnreachable as exc:
        raise UsageError(str(exc)) from None


# --- straight into a store ---------------------------------------------------------------


def _open(args: argparse.Namespace) -> Any:
    from .config import CollectorConfig
    from .server import open_store
    from .store.duckdb_store import StoreError

    config = CollectorConfig(store=args.store or "", db=args.db or CollectorConfig().db)
    try:
        return open_store(config)
    except StoreError as exc:
        raise UsageError(f"{exc} (while a collector runs on it, use --api)") from None


def _direct(args: argparse.Namespace) -> bool:
    return bool(args.db or args.store)


def _in_store(args: argparse.Namespace, work: Callable[[Any], T]) -> T:
    """`work(cursor)` on the store `--db` / `--store` names, opened and closed around it."""
    store = _open(args)
    try:
        cur = store.cursor()
        try:
            return work(cur)
        finally:
            cur.close()
    finally:
        store.close()


# --- the commands ------------------------------------------------------------------------


def _line(c: dict[str, Any]) -> str:
    scope = ", ".join(c["services"]) if c["services"] else "every service"
    state = f"revoked {c['revoked_at']}" if c.get("revoked_at") else "active"
    return f"{c['name']}: {c['kind']}, {scope}; made {c['created_at']}; {state}"


def create(args: argparse.Namespace) -> str:
    if _direct(args):
        try:
            token, _ = _in_store(
                args, lambda cur: cr.create(cur, args.name, args.kind, args.service, time.time_ns())
            )
        except cr.CredentialError as exc:
            raise Refused(str(exc)) from None
    else:
        body = {"name": args.name, "kind": args.kind, "services": args.service}
        token = _request(args, "POST", PATH, body)["token"]
    scope = ", ".join(sorted(set(args.service))) or "every service"
    return (
        f"made {args.kind} credential {args.name} ({scope}). Its token, shown this once "
        f"(only its hash is kept):\n{token}"
    )


def list_tokens(args: argparse.Namespace) -> str:
    from .query.tokens import credential

    if _direct(args):
        rows = [credential(r).model_dump() for r in _in_store(args, cr.listing)]
    else:
        rows = _request(args, "GET", PATH)["tokens"]
    return "\n".join(_line(c) for c in rows) if rows else "no credentials"


def revoke(args: argparse.Namespace) -> str:
    if _direct(args):
        done = _in_store(args, lambda cur: cr.revoke(cur, args.name, time.time_ns()))
        if not done:
            raise Refused(f"no active credential named {args.name[:80]!r}")
    else:
        _request(args, "DELETE", f"{PATH}/{urllib.parse.quote(args.name, safe='')}")
    return f"revoked {args.name}: its token is refused from now on (within seconds everywhere)"


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parsers = _parsers()
    command = args_list[0] if args_list and args_list[0] in ("create", "list", "revoke") else ""
    parser = parsers[command or "tokens"]
    try:
        if not command:
            parser.parse_args(args_list)  # --help, or the error naming the commands
            raise UsageError("say create, list or revoke")
        args = parser.parse_args(args_list[1:])
        run = {"create": create, "list": list_tokens, "revoke": revoke}[command]
        print(run(args), flush=True)
    except UsageError as exc:
        print(f"{parser.prog}: {exc} (see --help)", file=sys.stderr)
        return 2
    except Refused as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
