"""Credentials by kind: who may send spans, who may read, who may do both (docs/security.md).

Three kinds of named bearer token:

- **ingest** — may send spans (OTLP/HTTP `/v1/traces`, gRPC `Export`); may read nothing;
- **read** — may query (`/api/v1/*` GETs, `/metrics`, the OpenAPI pages); may send nothing;
- **admin** — both, plus acknowledging alerts and making and revoking credentials.

`HANDOFFSCOPE_TOKEN`, when set, is an admin credential of its own (named `HANDOFFSCOPE_TOKEN`,
never stored). The others live in the store's `credentials` table, made with
`handoffscope tokens create` (or `POST /api/v1/tokens`): only the token's SHA-256 is kept —
a token is 256 random bits, so its hash cannot be guessed back — and the token is shown
once. Each collector (and `handoffscope api`) reloads the active ones every `REFRESH_S`
seconds, and at once after a change it made itself: a revocation takes effect within
seconds on every collector sharing the store, with no restart.

Auth is on when `HANDOFFSCOPE_TOKEN` is set or the store holds an active credential; off
(everything open, as before credentials existed) otherwise. `/healthz` is always open. A
missing, unknown or revoked token gets the same answer (401); a known one of the wrong kind
403. Tokens are looked up by their hash (a dict), the admin token compared in constant time.

A credential may be scoped to services (`--service`, repeatable, `service.name` values):
what it reads is narrowed to those services everywhere (`Scope`: the query API, `/metrics`,
the CSV), and an ingest credential so scoped has another service's spans refused. A request
may narrow itself further with the `X-Handoffscope-Services` header (the dashboard does, for
the person signed in): the two are intersected, so a header never widens what a token sees.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import secrets
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from handoffscope.instrumentation import semconv as sc

from .store import statements

log = logging.getLogger(__name__)

INGEST = "ingest"
READ = "read"
ADMIN = "admin"
KINDS = (INGEST, READ, ADMIN)
ENV_ADMIN = "HANDOFFSCOPE_TOKEN"
REFRESH_S = 2.0
"""How often each process reloads the active credentials (a revocation's longest delay)."""
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""A credential's name: it appears in logs and listings, so no spaces and no markup."""
MAX_SERVICES = 64
PREFIX = {INGEST: "hsi_", READ: "hsr_", ADMIN: "hsa_"}
"""A token says its kind at a glance (and a secret scanner can look for it)."""


class CredentialError(ValueError):
    """A credential that cannot be made or found: the message says which field and why."""


@dataclass(frozen=True)
class Principal:
    """Who a request's token says it is."""

    name: str
    kind: str
    services: tuple[str, ...] = ()

    def may(self, need: str) -> bool:
        """Admin may everything; ingest and read only their own."""
        return self.kind == ADMIN or self.kind == need


@dataclass(frozen=True)
class Scope:
    """The services one request may see: `services` None for every one (an unscoped
    credential, no narrowing header), else exactly those (empty: none at all)."""

    services: tuple[str, ...] | None = None

    @property
    def param(self) -> list[str] | None:
        """The `$scope` parameter of the query statements (NULL: every service)."""
        return None if self.services is None else list(self.services)

    def sees(self, service: str | None) -> bool:
        return self.services is None or service in self.services

    def narrowed(self, service: str | None) -> Scope:
        """This scope and a request's `service` filter: the one service, if seen."""
        if service is None:
            return self
        return Scope((service,) if self.sees(service) else ())


EVERY_SERVICE = Scope()
MAX_NARROWED = 256
"""Services one X-Handoffscope-Services header may name (a bound on the request's work)."""


def narrowing(header: str | None) -> tuple[str, ...] | None:
    """The services an `X-Handoffscope-Services` value names (None: no header). Each name
    is percent-encoded, comma-separated; a value of only blanks names none. A
    `CredentialError` when it names more than `MAX_NARROWED`."""
    if header is None:
        return None
    names = {unquote(part.strip()) for part in header.split(",") if part.strip()}
    if len(names) > MAX_NARROWED:
        raise CredentialError(f"{sc.SCOPE_HEADER}: at most {MAX_NARROWED} services")
    return tuple(sorted(names))


def scope_of(who: Principal | None, header: str | None) -> Scope:
    """What a request may see: its credential's services, narrowed by its header."""
    own = set(who.services) if who is not None and who.services else None
    asked = narrowing(header)
    if own is None:
        return Scope(asked)
    if asked is None:
        return Scope(tuple(sorted(own)))
    return Scope(tuple(sorted(own.intersection(asked))))


def mint(kind: str) -> str:
    """A new token of `kind`: its prefix and 256 random bits, URL-safe."""
    return PREFIX[kind] + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def bearer(header: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header value (None: no bearer)."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def check_new(name: str, kind: str, services: Iterable[str]) -> tuple[str, ...]:
    """Validate a credential to be made; its services as a sorted tuple."""
    if not NAME_PATTERN.match(name or ""):
        raise CredentialError(
            f"name: {name[:80]!r} must be 1-64 of A-Z a-z 0-9 _ . - (it appears in logs)"
        )
    if name == ENV_ADMIN:
        raise CredentialError(f"name: {ENV_ADMIN} is the environment's admin token's")
    if kind not in KINDS:
        raise CredentialError(f"kind: {kind!r} is not one of {', '.join(KINDS)}")
    scoped = tuple(sorted(set(services)))
    if len(scoped) > MAX_SERVICES:
        raise CredentialError(f"services: at most {MAX_SERVICES}")
    spec = sc.AttributeSpec(sc.SERVICE_NAME, sc.STR, max_len=sc.MAX_NAME_LEN)
    for service in scoped:
        if sc.check_value(spec, service) is None:
            raise CredentialError(f"services: {service[:80]!r} is not a service.name")
    return scoped


def create(
    cur: Any, name: str, kind: str, services: Sequence[str], now: int
) -> tuple[str, dict[str, Any]]:
    """Make a credential; (its token, shown this once; its listing row). A taken name —
    even a revoked credential's — is a `CredentialError`."""
    scoped = check_new(name, kind, services)
    if statements.dicts(cur, "credentials/credential_named", {"name": name}):
        raise CredentialError(f"name: {name!r} is taken (names are never reused)")
    token = mint(kind)
    statements.run(
        cur,
        "credentials/insert_credential",
        {
            "name": name,
            "kind": kind,
            "services": list(scoped),
            "token_hash": token_hash(token),
            "now": now,
        },
    )
    row = {"name": name, "kind": kind, "services": scoped, "created_ns": now, "revoked_ns": None}
    return token, row


def listing(cur: Any) -> list[dict[str, Any]]:
    """Every credential, revoked ones too, by name (never a token or its hash)."""
    return [
        {**r, "services": tuple(r["services"] or ())}
        for r in statements.dicts(cur, "credentials/list_credentials")
    ]


def revoke(cur: Any, name: str, now: int) -> bool:
    """Revoke credential `name`; False when no active credential has that name."""
    return bool(statements.rows(cur, "credentials/revoke_credential", {"name": name, "now": now}))


class Credentials:
    """What a request's bearer token may do, for one process.

    `store`: where the credentials live (None: only `admin_token`). `start()` loads them
    and keeps them fresh from a daemon thread; `reload()` at once (after a change this
    process made)."""

    def __init__(self, admin_token: str = "", store: Any = None, refresh_s: float = REFRESH_S):
        self.admin_token = admin_token
        self.store = store
        self.refresh_s = refresh_s
        self._by_hash: dict[str, Principal] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def enabled(self) -> bool:
        """Auth is on: an admin token is set, or the store holds an active credential."""
        return bool(self.admin_token) or bool(self._by_hash)

    def reload(self) -> None:
        if self.store is None:
            return
        cur = self.store.cursor()
        try:
            rows = statements.dicts(cur, "credentials/active_credentials")
        finally:
            cur.close()
        self._by_hash = {
            r["token_hash"]: Principal(r["name"], r["kind"], tuple(r["services"] or ()))
            for r in rows
        }

    def start(self) -> None:
        self.reload()
        if self.store is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, name="hs-credentials", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.wait(self.refresh_s):
            try:
                self.reload()
            except Exception:  # a store that is closing, a dropped connection: next time
                log.debug("credentials: reload failed", exc_info=True)

    def principal(self, header: str | None) -> Principal | None:
        """Who the Authorization header says (None: no token, an unknown or a revoked one)."""
        token = bearer(header)
        if token is None:
            return None
        if self.admin_token and hmac.compare_digest(token.encode(), self.admin_token.encode()):
            return Principal(ENV_ADMIN, ADMIN)
        return self._by_hash.get(token_hash(token))

    def scope(self, authorization: str | None, header: str | None) -> Scope:
        """What a request may see (`scope_of`): with auth off, only its header narrows."""
        return scope_of(self.principal(authorization) if self.enabled else None, header)

    def check(self, header: str | None, need: str) -> int:
        """0 when the request may do `need` (ingest / read / admin); else its HTTP status:
        401 (no token, unknown or revoked: one answer for all) or 403 (the wrong kind)."""
        return self.admit(header, need)[0]

    def admit(self, header: str | None, need: str) -> tuple[int, tuple[str, ...]]:
        """`check`, and the services the credential is scoped to (empty: every one, or
        auth off): what an ingest credential may send spans for."""
        if not self.enabled:
            return 0, ()
        who = self.principal(header)
        if who is None:
            return 401, ()
        return (0 if who.may(need) else 403), who.services


def refusal(status: int, need: str) -> str:
    """The error message of a refused request (the same for unknown and revoked tokens)."""
    if status == 401:
        return (
            "missing, unknown or revoked bearer token (Authorization: Bearer <token>; "
            "docs/security.md)"
        )
    return f"this credential's kind may not {WHAT[need]} (docs/security.md)"


WHAT = {INGEST: "send spans", READ: "read", ADMIN: "do this: it takes an admin credential"}
