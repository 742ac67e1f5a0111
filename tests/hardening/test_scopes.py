"""Service scopes (docs/security.md): a credential scoped to services sees only theirs,
everywhere, and an ingest credential so scoped sends only theirs — against a real
collector (and, under `--store postgresql`, a real PostgreSQL store).

Two teams' services, `support-bot` and `billing-bot`, each with a run that loops, a wait
past its deadline, a run that claims done without proof, a verified run in one shared
conversation, sent through the real OTLP exporter with each team's own scoped ingest
credential. Then, with each team's scoped read credential:

- every GET path of the OpenAPI document, `/metrics` and the weekly CSV name nothing of the
  other team (its service, run ids, agents), and the lists that must show the team's own
  data do (so "nothing leaked" is not "nothing shown");
- each list holds exactly what an unscoped reader sees when it asks for that service;
- the other team's run and a conversation of only its runs are 404s, byte for byte the
  answer for an id that does not exist; a search by its trace id or conversation finds
  nothing;
- the `X-Handoffscope-Services` header narrows an unscoped credential the same way, and
  never widens a scoped one;
- a scoped admin acknowledges only its runs and manages no credential;
- a scoped ingest credential's spans of another service are refused (partial success,
  over HTTP and gRPC) while the rest of the export is kept.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import quote

import grpc
import httpx
import pytest
from hardening_support import bearer, make_credential
from support.collector import OTLPSender, otlp_exporter
from support.evidence import Run

from handoffscope.instrumentation import semconv as sc

ADMIN_TOKEN = "scopes-admin-77d2"
TEAMS = {"support-bot": "sup", "billing-bot": "bil"}
"""Each service and the tag its run ids and agent names carry (what a leak would show)."""
SHARED_CONVERSATION = "conv-both-teams"
EXPORT_METHOD = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def make(collector: Any, name: str, kind: str, services: list[str] | None = None) -> str:
    return make_credential(collector, ADMIN_TOKEN, name, kind, services)


def record_team(sender: OTLPSender, tag: str, now: int) -> dict[str, str]:
    """One team's runs on `sender`; returns the ids a test looks for."""
    t0 = now - 600 * 10**9
    loop = Run(sender, f"{tag}-run-loop", t0)
    loop.started()
    loop.handoff("l1", f"{tag}-planner", f"{tag}-coder", at=1.0)
    loop.handoff("l2", f"{tag}-coder", f"{tag}-planner", at=1.2)
    loop.handoff("l3", f"{tag}-planner", f"{tag}-coder", at=1.4)
    loop.handoff("l4", f"{tag}-coder", f"{tag}-planner", at=1.6)
    waiting = Run(sender, f"{tag}-run-wait", t0)
    waiting.started()
    waiting.handoff("w1", f"{tag}-triage", f"{tag}-approver", at=1.0)
    waiting.wait("w1", at=2.0, deadline=now - 60 * 10**9, owner=f"{tag}-lead")
    done = Run(sender, f"{tag}-run-done", t0)
    done.started()
    done.handoff("d1", f"{tag}-triage", f"{tag}-worker", at=1.0)
    done.ended(at=5.0)
    verified = Run(sender, f"{tag}-run-ok", t0)
    start = verified.status(
        sc.RUN_STATUS_STARTED, **{sc.GEN_AI_CONVERSATION_ID: SHARED_CONVERSATION}
    )
    verified.handoff("o1", f"{tag}-triage", f"{tag}-worker", at=1.0)
    verified.outcome(sc.OUTCOME_PASS, "o1", at=4.0)
    verified.ended(at=5.0)
    only = Run(sender, f"{tag}-run-alone", t0)
    only.status(sc.RUN_STATUS_STARTED, **{sc.GEN_AI_CONVERSATION_ID: f"conv-only-{tag}"})
    only.handoff("a1", f"{tag}-triage", f"{tag}-worker", at=1.0)
    return {"trace_id": format(start.context.trace_id, "032x")}


@pytest.fixture(scope="module")
def teams(module_collector_factory: Any) -> dict[str, Any]:
    collector = module_collector_factory(env={"HANDOFFSCOPE_TOKEN": ADMIN_TOKEN})
    tokens: dict[str, str] = {"all": make(collector, "read-everything", "read")}
    traces = {}
    now = time.time_ns()
    for service, tag in TEAMS.items():
        tokens[f"read-{tag}"] = make(collector, f"read-{tag}", "read", [service])
        tokens[f"ingest-{tag}"] = make(collector, f"ingest-{tag}", "ingest", [service])
        tokens[f"admin-{tag}"] = make(collector, f"admin-{tag}", "admin", [service])
        sender = OTLPSender(otlp_exporter(collector, token=tokens[f"ingest-{tag}"]), service)
        traces[service] = record_team(sender, tag, now)
        result = sender.send()
        sender.close()
        assert result.name == "SUCCESS"
    collector.judged()
    return {"collector": collector, "tokens": tokens, "traces": traces}


def get(teams: dict, path: str, token: str, headers: dict | None = None, **params) -> Any:
    return httpx.get(
        teams["collector"].http_endpoint + path,
        params=params,
        headers={**bearer(token), **(headers or {})},
        timeout=30,
    )


def leaks(text: str, other: str) -> list[str]:
    """What of service `other` (its name, its tag in run ids and agent names) `text` names."""
    tag = TEAMS[other]
    return [marker for marker in (other, f"{tag}-", f"conv-only-{tag}") if marker in text]


def get_paths(teams: dict) -> list[str]:
    spec = get(teams, "/openapi.json", ADMIN_TOKEN).json()
    paths = [p for p, ops in spec["paths"].items() if "get" in ops and "tokens" not in p]
    assert "/api/v1/runs/{run_id}" in paths and "/api/v1/conversations/{conversation_id}" in paths
    return paths


def test_a_scoped_reader_sees_its_services_and_nothing_of_the_others(teams: dict) -> None:
    for service, tag in TEAMS.items():
        (other,) = set(TEAMS) - {service}
        token = teams["tokens"][f"read-{tag}"]
        for path in get_paths(teams):
            filled = path.replace("{run_id}", f"{tag}-run-loop").replace(
                "{conversation_id}", SHARED_CONVERSATION
            )
            answer = get(teams, filled, token)
            assert answer.status_code == 200, (filled, answer.text[:300])
            assert not leaks(answer.text, other), (service, filled, leaks(answer.text, other))
        for path, params in (("/metrics", {}), ("/api/v1/review/weekly", {"format": "csv"})):
            answer = get(teams, path, token, **params)
            assert answer.status_code == 200, (path, answer.text[:300])
            assert not leaks(answer.text, other), (service, path)
            assert f"{tag}-" in answer.text or service in answer.text, (service, path)
        # Not vacuous: the team's own data is there, on each page that lists it.
        assert get(teams, "/api/v1/services", token).json()["services"] == [service]
        runs = get(teams, "/api/v1/runs", token).json()
        # (The ingest test below may add runs of its own: the same tag.)
        listed = {r["run_id"] for r in runs["runs"]}
        assert {f"{tag}-run-{k}" for k in ("loop", "wait", "done", "ok", "alone")} <= listed
        assert all(run_id.startswith(f"{tag}-") for run_id in listed)
        loops = get(teams, "/api/v1/loops", token).json()["loops"]
        assert [r["run_id"] for r in loops] == [f"{tag}-run-loop"]
        waits = get(teams, "/api/v1/approvals", token).json()
        assert [w["run_id"] for w in waits["approvals"]] == [f"{tag}-run-wait"]
        assert waits["counts"] == {sc.APPROVAL_OVERDUE: 1}
        false = get(teams, "/api/v1/false_completions", token).json()
        assert [r["run_id"] for r in false["runs"]] == [f"{tag}-run-done"] and false["total"] == 1
        edges = get(teams, "/api/v1/edges", token).json()["edges"]
        assert edges and all(e["from_agent"].startswith(f"{tag}-") for e in edges)
        conversation = get(teams, f"/api/v1/conversations/{SHARED_CONVERSATION}", token).json()
        assert conversation["services"] == [service]
        assert [r["run_id"] for r in conversation["runs"]] == [f"{tag}-run-ok"]
        metrics = get(teams, "/metrics", token).text
        assert f'handoffscope_approvals_overdue{{service="{service}"}} 1' in metrics
        # Other teams' series are out, and so are the sums that add them up.
        assert 'service="other"' not in metrics


def test_each_list_is_what_an_unscoped_reader_sees_of_that_service(teams: dict) -> None:
    everything = teams["tokens"]["all"]
    for service, tag in TEAMS.items():
        token = teams["tokens"][f"read-{tag}"]
        for path, key in (
            ("/api/v1/runs", "runs"),
            ("/api/v1/loops", "loops"),
            ("/api/v1/approvals", "approvals"),
            ("/api/v1/false_completions", "runs"),
            ("/api/v1/handoffs", "handoffs"),
        ):
            scoped = get(teams, path, token).json()[key]
            asked = get(teams, path, everything, service=service).json()[key]
            ids = [(r["run_id"], r.get("handoff_id")) for r in scoped]
            assert ids == [(r["run_id"], r.get("handoff_id")) for r in asked], path
        scoped_live = get(teams, "/api/v1/live", token).json()
        asked_live = get(teams, "/api/v1/live", everything, service=service).json()
        assert scoped_live["board"] == asked_live["board"]
        assert scoped_live["verdict_counts"] == asked_live["verdict_counts"]
        scoped_week = get(teams, "/api/v1/review/weekly", token).json()
        asked_week = get(teams, "/api/v1/review/weekly", everything, service=service).json()
        for key in ("weeks", "continuity", "spend"):
            assert scoped_week[key] == asked_week[key], key
        # Asking a scoped credential for another service is asking for nothing.
        (other,) = set(TEAMS) - {service}
        assert get(teams, "/api/v1/runs", token, service=other).json()["total"] == 0


def test_another_services_run_is_no_run_at_all(teams: dict) -> None:
    token = teams["tokens"]["read-sup"]
    theirs = get(teams, "/api/v1/runs/bil-run-loop", token)
    missing = get(teams, "/api/v1/runs/zzz-run-loop", token)
    assert theirs.status_code == missing.status_code == 404
    assert theirs.text.replace("bil-", "zzz-") == missing.text
    alone = get(teams, "/api/v1/conversations/conv-only-bil", token)
    nowhere = get(teams, "/api/v1/conversations/conv-only-zzz", token)
    assert alone.status_code == nowhere.status_code == 404
    assert alone.text.replace("bil", "zzz") == nowhere.text
    # Search by their trace id or their conversation finds nothing; by ours, ours.
    for q in (teams["traces"]["billing-bot"]["trace_id"], "conv-only-bil"):
        assert get(teams, "/api/v1/runs", token, q=q).json()["total"] == 0
    found = get(teams, "/api/v1/runs", token, q=teams["traces"]["support-bot"]["trace_id"])
    assert [r["run_id"] for r in found.json()["runs"]] == ["sup-run-ok"]
    # An unscoped reader finds both.
    both = get(teams, "/api/v1/runs", teams["tokens"]["all"], q=SHARED_CONVERSATION).json()
    assert {r["run_id"] for r in both["runs"]} == {"sup-run-ok", "bil-run-ok"}


def test_the_services_header_narrows_and_never_widens(teams: dict) -> None:
    header = sc.SCOPE_HEADER
    everything, support = teams["tokens"]["all"], teams["tokens"]["read-sup"]
    narrowed = get(teams, "/api/v1/runs", everything, {header: "support-bot"}).json()
    assert {r["run_id"][:4] for r in narrowed["runs"]} == {"sup-"}
    both = quote("support-bot", safe="") + "," + quote("billing-bot", safe="")
    widened = get(teams, "/api/v1/runs", support, {header: both}).json()
    assert {r["run_id"][:4] for r in widened["runs"]} == {"sup-"}
    assert get(teams, "/api/v1/runs", support, {header: "billing-bot"}).json()["total"] == 0
    assert get(teams, "/api/v1/runs", everything, {header: ""}).json()["total"] == 0
    assert (
        get(teams, "/api/v1/runs/bil-run-ok", everything, {header: "support-bot"}).status_code
        == 404
    )
    metrics = get(teams, "/metrics", everything, {header: "billing-bot"}).text
    assert "billing-bot" in metrics and "support-bot" not in metrics
    too_many = ",".join(f"s{i}" for i in range(300))
    answer = get(teams, "/api/v1/runs", everything, {header: too_many})
    assert answer.status_code == 400 and header in answer.json()["error"]


def test_a_scoped_admin_acknowledges_its_runs_only_and_manages_no_credential(
    teams: dict,
) -> None:
    collector, admin = teams["collector"], teams["tokens"]["admin-sup"]
    ack = {"event": sc.NOTIFY_RUN_LOOPING, "by": "alice", "for_seconds": 600}
    with httpx.Client(base_url=collector.http_endpoint, headers=bearer(admin), timeout=30) as c:
        theirs = c.post("/api/v1/acknowledgements", json={**ack, "run_id": "bil-run-loop"})
        assert theirs.status_code == 404, theirs.text
        ours = c.post("/api/v1/acknowledgements", json={**ack, "run_id": "sup-run-loop"})
        assert ours.status_code == 201, ours.text
        cleared = c.delete(
            "/api/v1/acknowledgements",
            params={"event": sc.NOTIFY_RUN_LOOPING, "run_id": "bil-run-loop"},
        )
        assert cleared.status_code == 404
        for answer in (
            c.get("/api/v1/tokens"),
            c.post("/api/v1/tokens", json={"name": "escalate", "kind": "admin"}),
            c.delete("/api/v1/tokens/read-bil"),
        ):
            assert answer.status_code == 403 and "scoped" in answer.json()["error"], answer.text
    # The other team does not see the acknowledgement either.
    listed = get(teams, "/api/v1/acknowledgements", teams["tokens"]["read-bil"]).json()
    assert not [a for a in listed["acknowledgements"] if a["run_id"].startswith("sup-")]


def test_a_scoped_ingest_credential_sends_only_its_services_spans(teams: dict) -> None:
    collector, token = teams["collector"], teams["tokens"]["ingest-sup"]
    everything = teams["tokens"]["all"]
    for protocol in ("http", "grpc"):
        mine = OTLPSender(otlp_exporter(collector, protocol, token=token), "support-bot")
        theirs = OTLPSender(otlp_exporter(collector, protocol, token=token), "billing-bot")
        Run(mine, f"sup-run-{protocol}", time.time_ns()).started()
        Run(theirs, f"bil-intruder-{protocol}", time.time_ns()).started()
        spans = [*mine.take(), *theirs.take()]
        if protocol == "http":
            answer = httpx.post(
                collector.http_endpoint + "/v1/traces",
                content=export_body(spans),
                headers={"Content-Type": "application/x-protobuf", **bearer(token)},
                timeout=30,
            )
            assert answer.status_code == 200
            rejected, message = partial_success(answer.content)
        else:
            rejected, message = grpc_export(collector, token, export_body(spans))
        assert rejected == 1 and "service.name" in message, message
        mine.close()
        theirs.close()
        collector.judged()
        assert get(teams, f"/api/v1/runs/sup-run-{protocol}", everything).status_code == 200
        assert get(teams, f"/api/v1/runs/bil-intruder-{protocol}", everything).status_code == 404
    assert collector.metric("handoffscope_spans_refused_total", reason="service_not_in_scope") == 2


def export_body(spans: list) -> bytes:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return encode_spans(spans).SerializeToString()


def partial_success(content: bytes) -> tuple[int, str]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )

    response = ExportTraceServiceResponse.FromString(content)
    return response.partial_success.rejected_spans, response.partial_success.error_message


def grpc_export(collector: Any, token: str, body: bytes) -> tuple[int, str]:
    with grpc.insecure_channel(collector.grpc_endpoint) as channel:
        export = channel.unary_unary(EXPORT_METHOD)
        answer = export(body, metadata=(("authorization", f"Bearer {token}"),), timeout=30)
    return partial_success(answer)


def test_a_scoped_reader_of_a_quieter_service_keeps_its_labels_on_metrics(
    collector_factory: Any,
) -> None:
    """With `--metrics-top 1` the busier team takes the one label an unscoped reader gets
    and the quieter team's figures are summed under `other`; the quieter team's scoped
    reader, who may not see that sum, still gets its own service labelled, its figures
    whole."""
    collector = collector_factory(
        env={"HANDOFFSCOPE_TOKEN": ADMIN_TOKEN}, args=("--metrics-top", "1")
    )
    everything = make(collector, "read-everything", "read")
    quiet = make(collector, "read-bil", "read", ["billing-bot"])
    now = time.time_ns()
    for service, tag in TEAMS.items():
        sender = OTLPSender(otlp_exporter(collector, token=ADMIN_TOKEN), service)
        record_team(sender, tag, now)
        if service == "support-bot":  # the busier one: more handoffs
            extra = Run(sender, f"{tag}-run-busy", now - 600 * 10**9)
            for k in range(6):
                extra.handoff(f"b{k}", f"{tag}-triage", f"{tag}-worker", at=1.0 + k / 10)
        assert sender.send().name == "SUCCESS"
        sender.close()
    collector.judged()

    def metrics(token: str) -> str:
        r = httpx.get(f"{collector.http_endpoint}/metrics", headers=bearer(token), timeout=30)
        assert r.status_code == 200, r.text
        return r.text

    unscoped = metrics(everything)
    assert 'handoffscope_approvals_overdue{service="support-bot"} 1' in unscoped
    assert 'service="billing-bot"' not in unscoped  # summed under other
    assert 'handoffscope_approvals_overdue{service="other"} 1' in unscoped
    scoped = metrics(quiet)
    assert 'handoffscope_approvals_overdue{service="billing-bot"} 1' in scoped
    assert 'handoffscope_runs_looping{service="billing-bot"} 1' in scoped
    assert "support-bot" not in scoped and "sup-" not in scoped
    assert 'service="other"' not in scoped
