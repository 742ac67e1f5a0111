"""The dashboard's settings, as data: name, default, help and environment variable.

`handoffscope dashboard` turns each into a flag (`--api`, `--port`, `--host`,
`--allowed-hosts`) that also
reads `HANDOFFSCOPE_<NAME>`; the running app reads the API URL and the token from the
environment the command sets up. Kept free of Streamlit so the command line starts fast
and quietly (importing `client` outside a Streamlit runtime warns once per cached function).
"""

from __future__ import annotations

from dataclasses import dataclass

ENV_PREFIX = "HANDOFFSCOPE_"
ENV_API = "HANDOFFSCOPE_API"
ENV_TOKEN = "HANDOFFSCOPE_TOKEN"
"""Bearer token for the collector; read from the environment only, never a flag (`ps` shows flags)."""
DEFAULT_API = "http://127.0.0.1:4318"


@dataclass(frozen=True)
class Setting:
    """One user-facing setting of `handoffscope dashboard`."""

    name: str
    default: str
    help: str
    type: type = str

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


SETTINGS: tuple[Setting, ...] = (
    Setting("api", DEFAULT_API, "base URL of the collector's query API"),
    Setting("port", "8501", "port the dashboard listens on", int),
    Setting("host", "127.0.0.1", "address the dashboard binds to"),
    Setting(
        "allowed_hosts",
        "localhost,127.0.0.1,::1",
        "comma-separated Host names the dashboard's WebSocket (which carries everything it "
        "shows) accepts; `*.example.com` matches subdomains, `*` any; a specific --host is "
        "added. Protection against DNS rebinding (Streamlit's server.allowedHosts)",
    ),
)
