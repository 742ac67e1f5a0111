"""Schemathesis against the query API's own OpenAPI document: no input gets a 5xx.

The schema is loaded from the running collector (`/openapi.json`), so the test follows the
API as served. Schemathesis generates requests for every operation — valid parameters
(positive mode) and deliberately invalid ones (negative mode: wrong types, out-of-range
limits, malformed dates) — against a collector holding a few real runs, so queries touch
stored rows, not only empty tables. Every answer must be a non-5xx that conforms to the
schema's declared status codes, content types and response schemas; the collector must
stay healthy.

With HANDOFFSCOPE_TOKEN set the same holds with the token, and every operation answers
401 without it (see test_access.py for the exhaustive version).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from support.evidence import request_attributes
from support.otlp import export_request, otlp_span

from handoffscope.instrumentation import semconv as sc

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


def seed(collector: Any) -> None:
    """Three runs with real evidence: a healthy one, a refused contract, an open wait."""
    spans = []
    for run_id in ("run-api-1", "run-api-2", "run-api-3"):
        spans.append(otlp_span(sc.SPAN_RUN, {sc.RUN_ID: run_id, sc.RUN_STATUS: "started"}))
        spans.append(otlp_span(sc.SPAN_REQUEST, request_attributes(run_id, "h1")))
    spans.append(
        otlp_span(
            sc.SPAN_ACCEPT,
            {
                sc.RUN_ID: "run-api-2",
                sc.HANDOFF_ID: "h1",
                sc.REJECTION_REASON: sc.REJECTION_STALE,
                sc.VERDICT: sc.CONTRACT_REJECTED,
            },
        )
    )
    spans.append(
        otlp_span(sc.SPAN_WAIT, {sc.RUN_ID: "run-api-3", sc.HANDOFF_ID: "h1", sc.WAIT_OWNER: "ops"})
    )
    response = collector.post_traces(export_request(spans).SerializeToString())
    assert response.status_code == 200, response.text


def run_schemathesis(collector: Any, examples: int) -> int:
    """Every operation in both generation modes; returns the number of requests made."""
    headers = collector.headers()
    schema = schemathesis.openapi.from_url(
        collector.http_endpoint + "/openapi.json", headers=headers, timeout=30
    )
    operations = [result.ok() for result in schema.get_all_operations()]
    assert operations, "the OpenAPI document lists no operations"
    calls = [0]
    for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):

        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=schema.as_strategy(generation_mode=mode))
        def property_(case: schemathesis.Case) -> None:
            response = case.call(base_url=collector.http_endpoint, headers=headers, timeout=30)
            calls[0] += 1
            case.validate_response(response, checks=CHECKS, headers=headers)

        property_()
    assert collector.healthz()["status"] == "ok"
    return calls[0]


def test_query_api_never_answers_5xx(collector: Any) -> None:
    seed(collector)
    assert run_schemathesis(collector, 150) > 0


def test_query_api_never_answers_5xx_with_a_token(collector_factory: Any) -> None:
    collector = collector_factory(env={"HANDOFFSCOPE_TOKEN": "s3cret-token"})
    seed(collector)
    assert run_schemathesis(collector, 40) > 0


def test_unknown_run_ids_of_any_characters_get_the_json_404(collector: Any) -> None:
    """Found by the soak run: an id with a newline inside fell through to Starlette's
    plain-text 404 instead of the API's `{"error": ...}` (docs/api.md)."""
    for run_id in ("a\nb", "a\rb", "\n", "a/b", "%", "\x01", "ä\u2028z"):
        response = collector.get(f"/api/v1/runs/{quote(run_id, safe='')}")
        assert response.status_code == 404, run_id
        assert response.headers["content-type"].startswith("application/json"), run_id
        assert response.json()["error"], run_id


@pytest.mark.soak
@pytest.mark.timeout(1800)
def test_query_api_soak(collector: Any) -> None:
    seed(collector)
    run_schemathesis(collector, 2000)
