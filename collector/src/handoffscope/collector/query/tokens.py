"""`/api/v1/tokens`: list, make and revoke credentials through a running collector.

The embedded DuckDB file is locked by its collector, so `handoffscope tokens` goes through
these when given `--api` (docs/security.md). Admin only (`auth.need_of`). A process that
serves the store read-only (`handoffscope api`) lists them and answers the writes 405.
After a change the process reloads its own credentials at once; other collectors of a
shared store within `credentials.REFRESH_S` seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Path, Request
from fastapi.responses import Response

from .. import credentials as cr
from ..timefmt import iso
from . import models as m

log = logging.getLogger(__name__)
PATH = "/tokens"
READ_ONLY = (
    "this process serves the store read-only (handoffscope api): make and revoke "
    "credentials through a collector of the same store"
)


def credential(row: dict[str, Any]) -> m.Credential:
    return m.Credential(
        name=row["name"],
        kind=row["kind"],
        services=list(row["services"] or ()),
        created_at=iso(row["created_ns"]),
        revoked_at=iso(row["revoked_ns"]),
    )


def _json(model: Any, status: int) -> Response:
    return Response(model.model_dump_json(), status_code=status, media_type="application/json")


def _error(status: int, message: str) -> Response:
    return _json(m.Error(error=message), status)


OPEN = (
    "this collector is open (no HANDOFFSCOPE_TOKEN, no credential): start it with "
    "HANDOFFSCOPE_TOKEN set (an admin token) to manage credentials through its API, or "
    "make the first one with `handoffscope tokens create --db` before it starts"
)


SCOPED = (
    "an admin credential scoped to services may not manage credentials (it could make an "
    "unscoped one): use HANDOFFSCOPE_TOKEN or an admin credential without --service"
)


def token_routes(
    router: APIRouter,
    cursor: Callable[[], Any],
    *,
    writable: bool,
    guard: cr.Credentials | None,
    bad: dict[Any, Any],
) -> None:
    """Register GET, POST and DELETE /tokens on `router`. `cursor()`: a store cursor (a
    context manager); `guard`: this process's credentials, reloaded after a write.

    An open collector (auth off) makes none: a credential made there would close it to
    every client at once, and whoever reaches an open port could lock the others out.
    An admin credential scoped to services manages none either: it could make itself an
    unscoped one."""

    def scoped(request: Request) -> Response | None:
        who = guard.principal(request.headers.get("authorization")) if guard else None
        if who is not None and who.services:
            return _error(403, SCOPED)
        return None

    def refused(request: Request) -> Response | None:
        if not writable:
            return _error(405, READ_ONLY)
        if guard is None or not guard.enabled:
            return _error(403, OPEN)
        return scoped(request)

    def listing(request: Request) -> Response:
        no = scoped(request)
        if no is not None:
            return no
        with cursor() as cur:
            rows = cr.listing(cur)
        return _json(m.Credentials(tokens=[credential(r) for r in rows]), 200)

    def create(request: Request, body: m.TokenRequest) -> Response:
        no = refused(request)
        if no is not None:
            return no
        try:
            with cursor() as cur:
                token, row = cr.create(cur, body.name, body.kind, body.services, time.time_ns())
        except cr.CredentialError as exc:
            return _error(409 if "taken" in str(exc) else 400, str(exc))
        assert guard is not None
        guard.reload()
        log.info("credential %r (%s) made", body.name, body.kind)
        made = m.NewCredential(**credential(row).model_dump(), token=token)
        return _json(made, 201)

    def revoke(
        request: Request, name: str = Path(description="The credential's name.")
    ) -> Response:
        no = refused(request)
        if no is not None:
            return no
        with cursor() as cur:
            done = cr.revoke(cur, name, time.time_ns())
        if not done:
            return _error(404, f"no active credential named {name[:80]!r}")
        assert guard is not None
        guard.reload()
        log.info("credential %r revoked", name)
        return Response(status_code=204)

    error = {"model": m.Error}
    router.add_api_route(
        PATH,
        listing,
        methods=["GET"],
        response_model=m.Credentials,
        summary="Tokens",
        operation_id="tokens",
        description="Every credential, revoked ones too (never a token or its hash). Admin only.",
        responses={**bad, 403: {**error, "description": SCOPED}},
    )
    router.add_api_route(
        PATH,
        create,
        methods=["POST"],
        status_code=201,
        response_model=m.NewCredential,
        summary="Make token",
        operation_id="make_token",
        description="Make a credential; its token is in this answer only. Admin only.",
        responses={
            **bad,
            403: {**error, "description": f"{OPEN}; or {SCOPED}"},
            405: {**error, "description": READ_ONLY},
            409: {**error, "description": "The name is taken."},
        },
    )
    router.add_api_route(
        PATH + "/{name}",
        revoke,
        methods=["DELETE"],
        status_code=204,
        summary="Revoke token",
        operation_id="revoke_token",
        description="Revoke a credential now, on every collector of the store within seconds. "
        "Admin only.",
        responses={
            **bad,
            403: {**error, "description": f"{OPEN}; or {SCOPED}"},
            404: {**error, "description": "No active credential of that name."},
            405: {**error, "description": READ_ONLY},
        },
    )
