"""`handoffscope dashboard`: start the Streamlit dashboard against a running collector.

    handoffscope dashboard --api http://127.0.0.1:4318 --port 8501 [--host 127.0.0.1]

Every flag also reads `HANDOFFSCOPE_<FLAG>` (`HANDOFFSCOPE_API`, `HANDOFFSCOPE_PORT`,
`HANDOFFSCOPE_HOST`); a flag on the command line wins. When `HANDOFFSCOPE_TOKEN` is set,
the dashboard sends it to the collector as a bearer token; it is passed through the
environment only, never as an argument, so it does not show up in `ps`.

The command replaces itself (exec) with `python -m streamlit run app.py`, headless, bound
to `--host` (127.0.0.1 by default: the board shows which agents fail and where, which is
not for the whole network), with Streamlit's usage statistics off and its file watcher off
(nothing here is edited while it runs). Exec rather than a child process keeps one pid,
so a supervisor's stop signal reaches Streamlit directly.

Sign-in: with an `[auth]` section in Streamlit's secrets.toml, people sign in through the
organisation's OpenID Connect provider and see the services `--group-scopes` gives their
groups (`handoffscope.dashboard.signin`). Streamlit reads `~/.streamlit/secrets.toml`,
then `.streamlit/secrets.toml` in the directory the command runs from (or the files
`STREAMLIT_SECRETS_FILES` names); the command passes them to it untouched.

Host check: `--allowed-hosts` becomes Streamlit's `server.allowedHosts`, which refuses the
WebSocket — the only channel that carries data (run ids, agents, verdicts) — to a page
that reached the dashboard under another name (DNS rebinding). The HTML and scripts the
server still hands to any Host are Streamlit's public bundle, the same for everyone.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from handoffscope.dashboard.config import (
    ENV_API,
    ENV_GROUP_SCOPES,
    ENV_TOKEN,
    ENV_TRACE_LINK,
    DashboardConfig,
)
from handoffscope.instrumentation import options

APP = Path(__file__).with_name("app.py")


def build_parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    return options.build_parser(
        DashboardConfig,
        prog="handoffscope dashboard",
        description=(
            "Start the handoffscope dashboard (Streamlit) reading from a collector's query API. "
            f"Set {ENV_TOKEN} when the collector requires a bearer token."
        ),
        environ=environ,
    )


def parse_args(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> DashboardConfig:
    return options.parse(DashboardConfig, build_parser(environ), argv, environ)


def allowed_hosts(names: str, host: str) -> list[str]:
    """`--allowed-hosts` as a list, plus the bound address when it names one host."""
    hosts = [h.strip().lower() for h in names.split(",") if h.strip()]
    if host not in ("0.0.0.0", "::", "") and host.lower() not in hosts:
        hosts.append(host.lower())
    return hosts


def streamlit_command(
    api: str,
    port: int,
    host: str,
    hosts: Sequence[str] = ("localhost", "127.0.0.1", "::1"),
    trace_link: str = "",
    group_scopes: str = "",
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment `main` execs: split out so a test can check them."""
    argv = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(APP),
        "--server.port",
        str(port),
        "--server.address",
        host,
        "--server.headless",
        "true",
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
        "--client.toolbarMode",
        "viewer",  # no "Deploy" button or developer menu on an operator's board
        "--theme.base",
        "light",
    ]
    for name in hosts:
        argv += ["--server.allowedHosts", name]
    env = dict(os.environ)
    env[ENV_API] = api.rstrip("/")
    if trace_link:
        env[ENV_TRACE_LINK] = trace_link
    # Set or removed, never inherited: the app maps groups by what the command was given.
    env.pop(ENV_GROUP_SCOPES, None)
    if group_scopes:
        env[ENV_GROUP_SCOPES] = group_scopes
    return argv, env


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.api.startswith(("http://", "https://")):
        print(
            f"handoffscope dashboard: --api must be an http(s) URL, got {args.api!r}",
            file=sys.stderr,
        )
        return 2
    command, env = streamlit_command(
        args.api,
        args.port,
        args.host,
        allowed_hosts(args.allowed_hosts, args.host),
        trace_link=args.trace_link,
        group_scopes=args.group_scopes,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(command[0], command, env)
    return 0  # not reached: execve replaces the process


if __name__ == "__main__":
    raise SystemExit(main())
