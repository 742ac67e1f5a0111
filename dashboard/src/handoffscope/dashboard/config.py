"""Every option of `handoffscope dashboard`, declared once (`handoffscope.instrumentation.options`).

`handoffscope dashboard` turns each field of `DashboardConfig` into a flag (`--api`,
`--port`, `--host`, `--allowed-hosts`) that also reads `HANDOFFSCOPE_<NAME>`; the running
app reads the API URL and the token from the environment the command sets up. Kept free of
Streamlit so the command line starts fast and quietly (importing `client` outside a
Streamlit runtime warns once per cached function). docs/dashboard.md carries the table
`render_markdown_table()` prints (`python -m handoffscope.dashboard.config`), tested equal.
"""

from __future__ import annotations

from dataclasses import dataclass

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


ENV_API = "HANDOFFSCOPE_API"
ENV_TRACE_LINK = "HANDOFFSCOPE_TRACE_LINK"
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
