"""Every option of `handoffscope dashboard`, declared once (`handoffscope.instrumentation.options`).

`handoffscope dashboard` turns each field of `DashboardConfig` into a flag (`--api`,
`--port`, `--host`, `--allowed-hosts`, `--trace-link`, `--group-scopes`) that also reads
`HANDOFFSCOPE_<NAME>`; the running app reads the API URL, the token and the group scopes
from the environment the command sets up. Kept free of Streamlit so the command line
starts fast and quietly (importing `client` outside a Streamlit runtime warns once per
cached function). docs/dashboard.md carries the table `render_markdown_table()` prints
(`python -m handoffscope.dashboard.config`), tested equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from handoffscope.instrumentation import options
from handoffscope.instrumentation.options import option, port

TRACE_ID_FIELD = "{trace_id}"


def trace_link(text: str) -> str:
    """A URL template with `{trace_id}` (empty: no links)."""
    text = text.strip()
    if not text:
        return ""
    if not text.startswith(("http://", "https://")) or TRACE_ID_FIELD not in text:
        raise ValueError(f"must be an http(s) URL containing {TRACE_ID_FIELD}, got {text!r}")
    return text


GROUP_SEPARATOR = ","
SERVICE_SEPARATOR = "+"


MAX_SCOPED_SERVICES = 256
"""The collector's bound on the services one request is narrowed to (X-Handoffscope-Services)."""


def group_scopes(text: str) -> dict[str, tuple[str, ...]]:
    """`GROUP=SERVICE[+SERVICE],…` as {group: services}: which services the people of each
    OpenID Connect group may see (docs/security.md, "Dashboard sign-in"). Empty: no group
    sees anything. A group or service name holding `,`, `+`, `=` or `%` is written
    percent-encoded. Every entry must name a group and at least one service, and a group
    appears once: a typo must not quietly show a team nothing, or everything."""
    mapping: dict[str, tuple[str, ...]] = {}
    if not text.strip():
        return mapping
    for entry in text.split(GROUP_SEPARATOR):
        group, sep, names = entry.partition("=")
        group = unquote(group.strip())
        if not sep or not group:
            raise ValueError(f"{entry.strip()!r} is not GROUP=SERVICE[+SERVICE]")
        services = [unquote(n.strip()) for n in names.split(SERVICE_SEPARATOR)]
        if not all(services):
            raise ValueError(f"{entry.strip()!r} names an empty service")
        if group in mapping:
            raise ValueError(f"group {group!r} is given twice")
        mapping[group] = tuple(sorted(set(services)))
    every = {s for services in mapping.values() for s in services}
    if len(every) > MAX_SCOPED_SERVICES:
        # The collector narrows a request to at most this many (the header's bound): a
        # person in every group would otherwise get an error on each page.
        raise ValueError(
            f"{len(every)} services in all: the collector narrows a request to at most "
            f"{MAX_SCOPED_SERVICES}"
        )
    return mapping


def group_scopes_text(text: str) -> str:
    """`--group-scopes`' converter: the text as given, once `group_scopes` takes it."""
    group_scopes(text)
    return text.strip()


ENV_API = "HANDOFFSCOPE_API"
ENV_TRACE_LINK = "HANDOFFSCOPE_TRACE_LINK"
ENV_GROUP_SCOPES = "HANDOFFSCOPE_GROUP_SCOPES"
ENV_TOKEN = "HANDOFFSCOPE_TOKEN"
"""Bearer token for the collector; read from the environment only, never a flag (`ps` shows flags)."""
DEFAULT_API = "http://127.0.0.1:4318"


@dataclass(frozen=True)
class DashboardConfig:
    """What `handoffscope dashboard` runs with."""

    api: str = option(DEFAULT_API, "Base URL of the collector's query API.", metavar="URL")
    port: int = option(8501, "Port the dashboard listens on.", type=port, metavar="PORT")
    host: str = option("127.0.0.1", "Address the dashboard binds to.", metavar="ADDRESS")
    allowed_hosts: str = option(
        "localhost,127.0.0.1,::1",
        "Comma-separated Host names the dashboard's WebSocket (which carries everything it "
        "shows) accepts; `*.example.com` matches subdomains, `*` any; a specific --host is "
        "added. Protection against DNS rebinding (Streamlit's server.allowedHosts).",
        type=options.hosts,
        metavar="HOSTS",
    )
    trace_link: str = option(
        "",
        "URL of a trace in your trace viewer, with `{trace_id}` where the 32-hex trace id goes "
        "(Jaeger `http://jaeger:16686/trace/{trace_id}`, Grafana Tempo's explore URL, "
        "Langfuse's trace page): Run detail links the run's traces there. Empty: no links.",
        type=trace_link,
        metavar="URL",
        env=ENV_TRACE_LINK,
    )
    group_scopes: str = option(
        "",
        "Who sees what once people sign in through OpenID Connect (an `[auth]` section in "
        "Streamlit's secrets.toml): `GROUP=SERVICE[+SERVICE],…` maps a group of the ID "
        "token's `groups` claim to the services its people see; a person sees the services "
        "of all their groups, a person in no listed group sees nothing. Set without `[auth]`, "
        "the dashboard shows only an error saying so.",
        type=group_scopes_text,
        metavar="GROUP=SERVICE[+SERVICE],…",
        env=ENV_GROUP_SCOPES,
    )
    token: str = option(
        "",
        "Bearer token the dashboard sends to the collector (`Authorization: Bearer <token>`) "
        "when the collector requires one.",
        flag=None,
        env=ENV_TOKEN,
    )


SETTINGS = options.options_of(DashboardConfig)


def render_markdown_table() -> str:
    """The options table of docs/dashboard.md."""
    return options.markdown_table(DashboardConfig)


if __name__ == "__main__":
    print(render_markdown_table(), end="")
