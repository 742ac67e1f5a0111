"""Credentials by kind (docs/security.md): ingest sends and reads nothing, read queries and
sends nothing, admin does both, acknowledges and manages credentials — on every endpoint,
over HTTP and gRPC, against a real collector subprocess.

- Each kind against every GET path of the OpenAPI document (path parameters filled),
  `/metrics`, `/openapi.json`, `/docs`, the acknowledgement writes, the token API, OTLP/HTTP
  and OTLP/gRPC ingest: 200/201 where the kind may, 403 / PERMISSION_DENIED where it may not;
  401 / UNAUTHENTICATED without a token, with an unknown one or a revoked one — the same
  answer, byte for byte, for the unknown and the revoked.
- A revocation takes effect without a restart: at once on the collector that made it, within
  seconds on another collector of the same PostgreSQL store.
- No token in plain text in any file the collector writes (its folder, its store, its log).
- `handoffscope tokens create / list / revoke` through a running collector's API (an admin
  token) and straight into a DuckDB file no collector holds.
- Without HANDOFFSCOPE_TOKEN and credentials a collector is open, and makes none through its
  API; a credential made in its file before it starts (`--db`) closes it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
from hardening_support import bearer, make_credential
from support.evidence import request_attributes
from support.otlp import export_request, otlp_span
from support.polling import eventually
from support.privacy import stored_text
from support.stores import is_dsn

from handoffscope.instrumentation import semconv as sc

ADMIN_TOKEN = "credentials-admin-5c1f"
EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
RUN = "run-credentials"


def body(run_id: str) -> bytes:
    attrs = {**request_attributes(run_id, "h1"), sc.GEN_AI_CONVERSATION_ID: "conv-credentials"}
    return export_request([otlp_span(sc.SPAN_REQUEST, attrs)]).SerializeToString()


def make(collector: Any, name: str, kind: str, services: list[str] | None = None) -> str:
    return make_credential(collector, ADMIN_TOKEN, name, kind, services)


def post_traces(collector: Any, token: str | None, run_id: str = RUN) -> httpx.Response:
    return httpx.post(
        collector.http_endpoint + "/v1/traces",
        content=body(run_id),
        headers={"Content-Type": "application/x-protobuf", **bearer(token)},
        timeout=30,
    )


def grpc_code(collector: Any, token: str | None, run_id: str = RUN) -> grpc.StatusCode:
    with grpc.insecure_channel(collector.grpc_endpoint) as channel:
        export = channel.unary_unary(EXPORT_METHOD)
        metadata = (("authorization", f"Bearer {token}"),) if token else ()
        try:
            export(body(run_id), metadata=metadata, timeout=30)
        except grpc.RpcError as exc:
            return exc.code()
        return grpc.StatusCode.OK


def read_paths(collector: Any) -> list[str]:
    """Every GET path of the OpenAPI document, path parameters filled, and the extras."""
    spec = httpx.get(
        collector.http_endpoint + "/openapi.json", headers=bearer(ADMIN_TOKEN), timeout=30
    ).json()
    paths = []
    for path, operations in spec["paths"].items():
        if "get" in operations and not path.startswith("/api/v1/tokens"):
            filled = path.replace("{run_id}", RUN).replace("{conversation_id}", "conv-credentials")
            paths.append(filled)
    assert any(p.startswith("/api/v1/runs") for p in paths)
    return [*paths, "/metrics", "/openapi.json", "/docs"]


@pytest.fixture(scope="module")
def guarded(module_collector_factory: Any) -> Any:
    return module_collector_factory(env={"HANDOFFSCOPE_TOKEN": ADMIN_TOKEN})


@pytest.fixture(scope="module")
def tokens(guarded: Any) -> dict[str, str]:
    """One credential of each kind, made through the API with the admin token."""
    made = {kind: make(guarded, f"every-{kind}", kind) for kind in ("ingest", "read", "admin")}
    assert post_traces(guarded, made["ingest"]).status_code == 200
    guarded.judged()  # RUN exists: its pages answer 200
    return made


def test_each_kind_may_do_what_it_is_for_and_nothing_else(guarded: Any, tokens: dict) -> None:
    ingest, read, admin = tokens["ingest"], tokens["read"], tokens["admin"]
    with httpx.Client(base_url=guarded.http_endpoint, timeout=30) as client:
        for path in read_paths(guarded):
            for token in (read, admin, ADMIN_TOKEN):
                answer = client.get(path, headers=bearer(token))
                assert answer.status_code == 200, (path, answer.text[:200])
            refused = client.get(path, headers=bearer(ingest))
            assert refused.status_code == 403, path
            assert RUN not in refused.text and "may not read" in refused.json()["error"]
        # Managing credentials: admin only.
        for token, status in ((read, 403), (ingest, 403), (admin, 200)):
            assert client.get("/api/v1/tokens", headers=bearer(token)).status_code == status
        listed = client.get("/api/v1/tokens", headers=bearer(admin)).json()["tokens"]
        assert {t["name"] for t in listed} >= {"every-ingest", "every-read", "every-admin"}
        assert all("token" not in t for t in listed)
        # Acknowledging: admin only; reading the acknowledgements: read too.
        ack = {"event": sc.NOTIFY_RUN_STUCK, "run_id": RUN, "by": "alice", "for_seconds": 60}
        for token in (read, ingest):
            answer = client.post("/api/v1/acknowledgements", json=ack, headers=bearer(token))
            assert answer.status_code == 403, answer.text
        answer = client.post("/api/v1/acknowledgements", json=ack, headers=bearer(admin))
        assert answer.status_code == 201, answer.text
        assert client.get("/api/v1/acknowledgements", headers=bearer(read)).status_code == 200
    # Sending spans: ingest and admin, over HTTP and gRPC; read may not.
    for token in (ingest, admin, ADMIN_TOKEN):
        assert post_traces(guarded, token).status_code == 200
        assert grpc_code(guarded, token) == grpc.StatusCode.OK
    refused = post_traces(guarded, read)
    assert refused.status_code == 403
    assert grpc_code(guarded, read) == grpc.StatusCode.PERMISSION_DENIED
    # Probes need no secret.
    assert httpx.get(guarded.http_endpoint + "/healthz", timeout=30).status_code == 200


def test_unknown_and_revoked_tokens_get_one_answer_and_revocation_needs_no_restart(
    guarded: Any, tokens: dict
) -> None:
    doomed = make(guarded, "doomed-read", "read")
    doomed_ingest = make(guarded, "doomed-ingest", "ingest")
    assert guarded.get("/api/v1/runs", token=doomed).status_code == 200
    for name in ("doomed-read", "doomed-ingest"):
        answer = httpx.delete(
            f"{guarded.http_endpoint}/api/v1/tokens/{name}", headers=bearer(ADMIN_TOKEN), timeout=30
        )
        assert answer.status_code == 204
    # At once, on the collector that revoked them: the next request is refused.
    revoked = guarded.get("/api/v1/runs", token=doomed)
    unknown = guarded.get("/api/v1/runs", token="hsr_" + "x" * 43)
    assert revoked.status_code == unknown.status_code == 401
    assert revoked.content == unknown.content
    assert revoked.headers["www-authenticate"] == unknown.headers["www-authenticate"]
    assert post_traces(guarded, doomed_ingest).content == post_traces(guarded, "nope").content
    assert grpc_code(guarded, doomed_ingest) == grpc.StatusCode.UNAUTHENTICATED
    assert grpc_code(guarded, None) == grpc.StatusCode.UNAUTHENTICATED
    # Revoked stays listed, and its name is never reused.
    listed = guarded.api("/api/v1/tokens")["tokens"]
    (gone,) = [t for t in listed if t["name"] == "doomed-read"]
    assert gone["revoked_at"] is not None
    again = httpx.post(
        guarded.http_endpoint + "/api/v1/tokens",
        json={"name": "doomed-read", "kind": "read"},
        headers=bearer(ADMIN_TOKEN),
        timeout=30,
    )
    assert again.status_code == 409 and "taken" in again.json()["error"]
    bad = httpx.post(
        guarded.http_endpoint + "/api/v1/tokens",
        json={"name": "two words", "kind": "reader"},
        headers=bearer(ADMIN_TOKEN),
        timeout=30,
    )
    assert bad.status_code == 400


def test_no_token_is_kept_in_plain_text(guarded: Any, tokens: dict) -> None:
    guarded.loaded()
    secrets = [*tokens.values(), ADMIN_TOKEN]
    assert not [t for t in secrets if t in guarded.log()]
    if is_dsn(guarded.store):
        text = stored_text(guarded.store)
        assert not [t for t in tokens.values() if t in text]
        return
    folder = Path(guarded.db_path).parent
    for path in (p for p in folder.rglob("*") if p.is_file()):
        raw = path.read_bytes()
        assert not [t for t in secrets if t.encode() in raw], path.name


def test_revocation_reaches_another_collector_of_the_store_within_seconds(
    collector_factory: Any, postgres_dsn: str
) -> None:
    env = {"HANDOFFSCOPE_TOKEN": ADMIN_TOKEN}
    near = collector_factory(env=env, args=["--store", postgres_dsn])
    far = collector_factory(env=env, args=["--store", postgres_dsn])
    token = make(near, "shared-read", "read")
    # Made on one collector, admitted by the other within seconds.
    eventually(lambda: far.get("/api/v1/runs", token=token).status_code, lambda s: s == 200)
    httpx.delete(
        f"{near.http_endpoint}/api/v1/tokens/shared-read", headers=bearer(ADMIN_TOKEN), timeout=30
    ).raise_for_status()
    eventually(
        lambda: far.get("/api/v1/runs", token=token).status_code,
        lambda s: s == 401,
        timeout=30,
        what="the revocation reaching the other collector",
    )


def tokens_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "handoffscope.cli", "tokens", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_the_tokens_command_through_a_running_collector_and_into_a_file(
    guarded: Any, tmp_path: Path
) -> None:
    api = ["--api", guarded.http_endpoint, "--token", ADMIN_TOKEN]
    made = tokens_cli("create", "--kind", "read", "--service", "support-bot", "cli-read", *api)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip().splitlines()[-1]
    assert token.startswith("hsr_")
    assert guarded.get("/api/v1/runs", token=token).status_code == 200
    listed = tokens_cli("list", *api)
    assert "cli-read: read, support-bot;" in listed.stdout and token not in listed.stdout
    # A read credential may not manage credentials: refused, exit 1, one line.
    refused = tokens_cli("list", "--api", guarded.http_endpoint, "--token", token)
    assert refused.returncode == 1 and "403" in refused.stderr
    assert tokens_cli("revoke", "cli-read", *api).returncode == 0
    assert guarded.get("/api/v1/runs", token=token).status_code == 401
    assert tokens_cli("revoke", "cli-read", *api).returncode == 1  # nothing active to revoke

    db = str(tmp_path / "offline.duckdb")
    offline = tokens_cli("create", "--kind", "ingest", "offline-app", "--db", db)
    assert offline.returncode == 0, offline.stderr
    assert "offline-app: ingest, every service;" in tokens_cli("list", "--db", db).stdout
    unreachable = tokens_cli("list", "--api", "http://127.0.0.1:9", "--token", "x")
    assert unreachable.returncode == 2 and "cannot reach" in unreachable.stderr


def test_an_open_collector_makes_no_credential_but_one_made_before_closes_it(
    collector_factory: Any, tmp_path: Path
) -> None:
    open_one = collector_factory()
    assert open_one.get("/api/v1/runs").status_code == 200  # no HANDOFFSCOPE_TOKEN: open
    answer = httpx.post(
        open_one.http_endpoint + "/api/v1/tokens",
        json={"name": "first-admin", "kind": "admin"},
        timeout=30,
    )
    # Whoever reaches an open port could otherwise lock everyone else out.
    assert answer.status_code == 403 and "HANDOFFSCOPE_TOKEN" in answer.json()["error"]
    assert open_one.get("/api/v1/runs").status_code == 200
    # The first credential made in the file before the collector starts: auth is on.
    db = tmp_path / "first.duckdb"
    made = tokens_cli("create", "--kind", "admin", "first-admin", "--db", str(db))
    assert made.returncode == 0, made.stderr
    first = made.stdout.strip().splitlines()[-1]
    closed = collector_factory(args=["--db", str(db)])
    assert closed.get("/api/v1/runs").status_code == 401
    assert closed.get("/api/v1/runs", token=first).status_code == 200
    assert "auth=on" in closed.log()
