"""Access: with HANDOFFSCOPE_TOKEN set, nothing gets in or out without it; binds are loopback.

- OTLP/HTTP ingest answers 401 to a missing, wrong or malformed bearer token (and stores
  nothing); OTLP/gRPC answers UNAUTHENTICATED — the real SDK exporters with the wrong token
  fail, with the right one succeed.
- Every query endpoint the OpenAPI document lists, plus /metrics, /openapi.json and /docs,
  answers 401 without the token and serves with it; /healthz stays open for probes.
- The dashboard (real Streamlit app, AppTest) reads the collector with the right token and
  shows an error — not data, not a crash — with a wrong one.
- A collector started without --host listens on loopback only (its listening sockets, read
  from the kernel through psutil, are the ports it announced and nothing else).
"""

from __future__ import annotations

import ipaddress
from typing import Any

import grpc
import httpx
import psutil
import pytest
from support.dashboard import APP
from support.evidence import request_attributes
from support.otlp import export_request, otlp_span

from handoffscope.instrumentation import semconv as sc

TOKEN = "hardening-token-7d1e"
EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
BAD_AUTHORIZATION = (
    None,
    "",
    "Bearer",
    "Bearer wrong-token",
    f"Bearer {TOKEN}x",
    f"Bearer {TOKEN[:-1]}",
    f"Basic {TOKEN}",
    TOKEN,
    f"Token {TOKEN}",
)


CONVERSATION = "conv-friend"
"""The conversation run-friend is a turn of (its page exists)."""


def body(run_id: str) -> bytes:
    return export_request(
        [
            otlp_span(
                sc.SPAN_REQUEST,
                {**request_attributes(run_id, "h1"), sc.GEN_AI_CONVERSATION_ID: CONVERSATION},
            )
        ]
    ).SerializeToString()


def auth_headers(value: str | None) -> dict[str, str]:
    return {} if value is None else {"Authorization": value}


@pytest.fixture(scope="module")
def guarded(module_collector_factory: Any) -> Any:
    """One collector with a token for the module; started, like any, without --host."""
    return module_collector_factory(env={"HANDOFFSCOPE_TOKEN": TOKEN})


def test_ingest_refuses_missing_and_wrong_tokens(guarded: Any, otlp_sender_factory: Any) -> None:
    url = guarded.http_endpoint + "/v1/traces"
    stored_before = guarded.healthz()["spans_stored"]
    for value in BAD_AUTHORIZATION:
        response = httpx.post(
            url,
            content=body("run-intruder"),
            headers={"Content-Type": "application/x-protobuf", **auth_headers(value)},
            timeout=30,
        )
        assert response.status_code == 401, value
        assert response.headers["www-authenticate"].startswith("Bearer")
    # Not a token by another route either: a query parameter is not a credential.
    response = httpx.post(
        url,
        params={"token": TOKEN},
        content=body("run-intruder"),
        headers={"Content-Type": "application/x-protobuf"},
        timeout=30,
    )
    assert response.status_code == 401

    with grpc.insecure_channel(guarded.grpc_endpoint) as channel:
        export = channel.unary_unary(EXPORT_METHOD)
        for value in BAD_AUTHORIZATION:
            metadata = () if value is None else (("authorization", value),)
            with pytest.raises(grpc.RpcError) as refused:
                export(body("run-intruder"), metadata=metadata, timeout=30)
            assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED, value

    # The real SDK exporters: wrong token fails (UNAUTHENTICATED / 401 are not retried),
    # the right one is stored.
    for protocol in ("http", "grpc"):
        intruder = otlp_sender_factory(guarded, protocol, "intruder", token="wrong")
        intruder.emit(sc.SPAN_REQUEST, request_attributes(f"run-intruder-{protocol}", "h1"))
        assert intruder.send().name == "FAILURE"
        friend = otlp_sender_factory(guarded, protocol, "friend")  # the collector's token
        friend.emit(sc.SPAN_REQUEST, request_attributes(f"run-friend-{protocol}", "h1"))
        assert friend.send().name == "SUCCESS"
    response = httpx.post(
        url,
        content=body("run-friend-raw"),
        headers={"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"},
        timeout=30,
    )
    assert response.status_code == 200

    # The three friends' spans, and no intruder's.
    assert guarded.healthz()["spans_stored"] == stored_before + 3
    runs = {run["run_id"] for run in guarded.api("/api/v1/runs", limit=1000)["runs"]}
    assert {"run-friend-http", "run-friend-grpc", "run-friend-raw"} <= runs
    assert not {run for run in runs if run.startswith("run-intruder")}


def query_paths(collector: Any) -> list[str]:
    """Every GET path of the OpenAPI document (path parameters filled), plus the extras."""
    spec = collector.api("/openapi.json")
    paths = []
    for path, operations in spec["paths"].items():
        if "get" in operations:
            filled = path.replace("{run_id}", "run-friend")
            paths.append(filled.replace("{conversation_id}", CONVERSATION))
    assert any(p.startswith("/api/v1/") for p in paths)
    return [*paths, "/metrics", "/openapi.json", "/docs"]


def test_every_query_endpoint_refuses_missing_and_wrong_tokens(guarded: Any) -> None:
    response = guarded.post_traces(body("run-friend"))
    assert response.status_code == 200
    guarded.judged()  # stored and judged: run-friend's page exists (verdicts trail the 200)
    paths = query_paths(guarded)
    with httpx.Client(base_url=guarded.http_endpoint, timeout=30) as client:
        for path in paths:
            if path == "/healthz":
                continue
            for value in BAD_AUTHORIZATION:
                response = client.get(path, headers=auth_headers(value))
                assert response.status_code == 401, (path, value)
                assert "run-friend" not in response.text
            response = client.get(path, headers=guarded.headers())  # with the token
            assert response.status_code == 200, (path, response.text[:300])
        # Probes need no secret.
        assert client.get("/healthz").status_code == 200


def test_dashboard_works_with_the_token_and_refuses_without(
    guarded: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from streamlit.testing.v1 import AppTest

    from handoffscope.dashboard.config import ENV_API, ENV_TOKEN

    assert guarded.post_traces(body("run-dashboard")).status_code == 200
    guarded.judged()  # the live board shows verdicts, which trail the acknowledgement
    monkeypatch.setenv(ENV_API, guarded.http_endpoint)

    def live_page(token: str) -> str:
        monkeypatch.setenv(ENV_TOKEN, token)
        at = AppTest.from_file(str(APP), default_timeout=60)
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        parts = [str(node.proto) for node in at.main]
        parts += [getattr(df.value, "data", df.value).to_csv() for df in at.dataframe]
        return "\n".join(parts), [e.value for e in at.error]

    shown, errors = live_page(TOKEN)
    assert "run-dashboard" in shown
    assert not errors
    shown, errors = live_page("wrong-token")
    assert "run-dashboard" not in shown
    assert errors  # says the token was refused, instead of showing an empty board


def test_default_binds_are_loopback_only(guarded: Any) -> None:
    # The collectors of these tests get only ports, a file and a token: --host is the default.
    assert "--host" not in guarded.command()
    process = psutil.Process(guarded.proc.pid)
    listening = [
        c.laddr for c in process.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN
    ]
    # We are looking at the right sockets: the ports the collector announced are there.
    assert {addr.port for addr in listening} == {guarded.http_port, guarded.grpc_port}
    for addr in listening:
        ip = ipaddress.ip_address(addr.ip)
        # gRPC listens on a dual-stack socket: 127.0.0.1 shows as ::ffff:127.0.0.1.
        ip = getattr(ip, "ipv4_mapped", None) or ip
        assert ip.is_loopback, listening
    assert "http://127.0.0.1:" in guarded.log()
