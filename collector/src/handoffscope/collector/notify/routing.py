"""Where notification events go: destinations, and routes by owner, service and event.

Two sources, combined:

- every `--notify URL` is a destination that receives every event. Options ride in the
  URL's fragment, which HTTP never sends: `https://example.com/hook#format=slack&rate=2`
  (keys: `name`, `format`, `rate`, `burst`, `max_batch`, `timeout`, `max_attempts`,
  `backoff`, `backoff_max`). Its signature key and bearer token are
  `HANDOFFSCOPE_NOTIFY_SECRET` / `HANDOFFSCOPE_NOTIFY_TOKEN`.
- `--notify-config FILE`, a JSON document (docs/alerts.md has a full example):

      {"destinations": {"finance": {"url": "https://…", "format": "slack",
                                    "secret_env": "FINANCE_HOOK_SECRET"}},
       "routes": [{"owner": "finance-approvers", "to": ["finance"]},
                  {"service": "support", "event": ["run_looping", "run_stuck"],
                   "to": ["oncall"]}]}

  A route matches when each of its `owner`, `service` and `event` (a string or a list)
  is absent or contains the event's value; an event goes to the union of the
  destinations of every matching route (a team's route and the on-call catch-all both
  fire). Secrets never sit in the file: `secret_env`, `token_env` and `url_env` name
  environment variables (a Slack webhook URL is itself a secret).

A mistake in the file stops the collector at start with the reason, rather than
dropping notifications at 3 a.m.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urldefrag

from handoffscope.instrumentation import semconv as sc

FORMAT_JSON = "json"
FORMAT_SLACK = "slack"
FORMATS = (FORMAT_JSON, FORMAT_SLACK)
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class RoutingError(ValueError):
    """The notification configuration cannot be used; the message says why."""


@dataclass(frozen=True)
class Destination:
    name: str
    url: str = field(repr=False)
    """Never logged or shown: a webhook URL often carries its own secret."""
    format: str = FORMAT_JSON
    secret: str = field(default="", repr=False)
    token: str = field(default="", repr=False)
    rate: float = 1.0
    """Posts per second, sustained (token bucket)."""
    burst: int = 5
    """Posts allowed back to back before `rate` applies."""
    max_batch: int = 50
    """Events one post may carry; a backlog is sent in batches, not one post per event."""
    timeout: float = 5.0
    max_attempts: int = 8
    backoff: float = 1.0
    """First retry delay in seconds; doubled per attempt (with jitter), up to backoff_max."""
    backoff_max: float = 300.0


# Options a URL fragment or a file entry may set, with their types.
_OPTIONS: dict[str, type] = {
    f.name: {"float": float, "int": int, "str": str}[str(f.type)]
    for f in fields(Destination)
    if f.name not in ("name", "url", "secret", "token")
}


def _check(d: Destination) -> Destination:
    if not NAME_PATTERN.match(d.name):
        raise RoutingError(f"destination name {d.name!r}: use letters, digits, _ . - (max 64)")
    if not re.match(r"^https?://[^\s/]+", d.url):
        raise RoutingError(f"destination {d.name}: url must be http:// or https://")
    if d.format not in FORMATS:
        raise RoutingError(f"destination {d.name}: format must be one of {FORMATS}")
    if not (d.rate > 0 and d.burst >= 1 and d.max_batch >= 1 and d.max_attempts >= 1):
        raise RoutingError(
            f"destination {d.name}: rate, burst, max_batch, max_attempts must be > 0"
        )
    if not (d.timeout > 0 and d.backoff >= 0 and d.backoff_max >= d.backoff):
        raise RoutingError(f"destination {d.name}: timeout > 0, 0 <= backoff <= backoff_max")
    return d


def _options(owner: str, given: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in given.items():
        kind = _OPTIONS.get(key)
        if kind is None:
            raise RoutingError(f"{owner}: unknown option {key!r} (known: {sorted(_OPTIONS)})")
        try:
            out[key] = kind(value)
        except (TypeError, ValueError):
            raise RoutingError(f"{owner}: {key} must be a {kind.__name__}") from None
    return out


def from_url(url: str, index: int, *, secret: str = "", token: str = "") -> Destination:
    """A `--notify URL` destination; options from the fragment."""
    base, fragment = urldefrag(url)
    opts = dict(parse_qsl(fragment, keep_blank_values=True))
    name = opts.pop("name", f"notify-{index}")
    what = f"--notify #{index}"
    return _check(Destination(name, base, secret=secret, token=token, **_options(what, opts)))


@dataclass(frozen=True)
class Route:
    to: tuple[str, ...]
    owner: tuple[str, ...] = ()
    service: tuple[str, ...] = ()
    event: tuple[str, ...] = ()

    def matches(self, event: str, owner: str | None, service: str | None) -> bool:
        return (
            (not self.event or event in self.event)
            and (not self.owner or owner in self.owner)
            and (not self.service or service in self.service)
        )


@dataclass(frozen=True)
class Routing:
    destinations: dict[str, Destination]
    routes: tuple[Route, ...]

    def __bool__(self) -> bool:
        return bool(self.destinations)

    def destinations_for(self, event: str, owner: str | None, service: str | None) -> list[str]:
        out: dict[str, None] = {}
        for route in self.routes:
            if route.matches(event, owner, service):
                out.update(dict.fromkeys(route.to))
        return list(out)


def _strings(where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) and v for v in items):
        raise RoutingError(f"{where}: expected a string or a list of strings")
    return tuple(items)


def _env(where: str, name: Any, environ: Mapping[str, str]) -> str:
    if name is None:
        return ""
    if not isinstance(name, str) or name not in environ:
        raise RoutingError(f"{where}: environment variable {name!r} is not set")
    return environ[name]


def parse_file(doc: Any, environ: Mapping[str, str]) -> Routing:
    """The routing of a `--notify-config` document (already JSON-decoded)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("destinations"), dict):
        raise RoutingError('the file must be an object with "destinations": {name: {...}}')
    unknown = set(doc) - {"destinations", "routes"}
    if unknown:
        raise RoutingError(f"unknown top-level keys {sorted(unknown)}")
    destinations = {}
    for name, entry in doc["destinations"].items():
        where = f"destination {name}"
        if not isinstance(entry, dict):
            raise RoutingError(f"{where}: expected an object")
        entry = dict(entry)
        url = entry.pop("url", None)
        url_env = entry.pop("url_env", None)
        if (url is None) == (url_env is None):
            raise RoutingError(f"{where}: give exactly one of url, url_env")
        url = url if url is not None else _env(where, url_env, environ)
        secret = _env(where, entry.pop("secret_env", None), environ)
        token = _env(where, entry.pop("token_env", None), environ)
        destinations[name] = _check(
            Destination(name, str(url), secret=secret, token=token, **_options(where, entry))
        )
    routes = []
    for i, entry in enumerate(doc.get("routes", [])):
        where = f"route {i + 1}"
        if not isinstance(entry, dict) or not entry.get("to"):
            raise RoutingError(f'{where}: expected an object with "to": [destination, ...]')
        unknown = set(entry) - {"to", "owner", "service", "event"}
        if unknown:
            raise RoutingError(f"{where}: unknown keys {sorted(unknown)}")
        route = Route(
            to=_strings(where, entry["to"]),
            owner=_strings(where, entry.get("owner")),
            service=_strings(where, entry.get("service")),
            event=_strings(where, entry.get("event")),
        )
        missing = [d for d in route.to if d not in destinations]
        if missing:
            raise RoutingError(f"{where}: unknown destinations {missing}")
        bad = [e for e in route.event if e not in sc.NOTIFY_EVENTS]
        if bad:
            raise RoutingError(f"{where}: unknown events {bad} (known: {list(sc.NOTIFY_EVENTS)})")
        routes.append(route)
    return Routing(destinations, tuple(routes))


def load(settings: Any, environ: Mapping[str, str] | None = None) -> Routing:
    """The routing the collector runs with: its `--notify` URLs plus its routing file."""
    env = os.environ if environ is None else environ
    routing = Routing({}, ())
    if settings.notify_config:
        path = Path(settings.notify_config)
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RoutingError(f"--notify-config {path}: {exc}") from None
        try:
            routing = parse_file(doc, env)
        except RoutingError as exc:
            raise RoutingError(f"--notify-config {path}: {exc}") from None
    destinations = dict(routing.destinations)
    routes = list(routing.routes)
    for i, url in enumerate(settings.notify, 1):
        d = from_url(url, i, secret=settings.notify_secret, token=settings.notify_token)
        if d.name in destinations:
            raise RoutingError(f"--notify #{i}: destination name {d.name!r} is taken")
        destinations[d.name] = d
        routes.append(Route(to=(d.name,)))
    return Routing(destinations, tuple(routes))
