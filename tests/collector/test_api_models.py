"""The query API's generated OpenAPI document says what the API does (query/openapi.py).

FastAPI generates the document from the routes and models; these are the parts it would
get wrong on its own: bad parameters are 400 `{"error"}` (not 422), the bearer scheme
and 401 exist exactly when a token is set, the weekly review also answers CSV. And the
few vocabularies the models cannot import stay equal to their source.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from handoffscope.collector.notify import delivery
from handoffscope.collector.query import models


def operations(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The GET operations (every path but a token's, which is only revoked, has one)."""
    return {path: item["get"] for path, item in spec["paths"].items() if "get" in item}


def writes(spec: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The other operations: acknowledging and clearing (docs/api.md, Acknowledgements),
    making and revoking credentials (docs/api.md, tokens)."""
    return {
        (method, path): op
        for path, item in spec["paths"].items()
        for method, op in item.items()
        if method != "get"
    }


@pytest.fixture(scope="module")
def open_spec(module_collector_factory: Any) -> dict[str, Any]:
    served: dict[str, Any] = module_collector_factory().api("/openapi.json")
    return served


def test_the_document_declares_400_not_422(open_spec: dict[str, Any]) -> None:
    assert open_spec["openapi"].startswith("3.1")
    ops = operations(open_spec)
    assert len(ops) == 15 and all(p.startswith("/api/v1/") for p in ops)
    acks, tokens = "/api/v1/acknowledgements", "/api/v1/tokens"
    assert set(writes(open_spec)) == {
        ("post", acks),
        ("delete", acks),
        ("post", tokens),
        ("delete", tokens + "/{name}"),
    }
    for key, op in writes(open_spec).items():
        assert "422" not in op["responses"] and "400" in op["responses"], key
    assert set(writes(open_spec)[("post", acks)]["responses"]) == {"201", "400", "404"}
    assert set(writes(open_spec)[("delete", acks)]["responses"]) == {"204", "400", "404"}
    made = writes(open_spec)[("post", tokens)]["responses"]
    assert set(made) == {"201", "400", "403", "405", "409"}
    revoked = writes(open_spec)[("delete", tokens + "/{name}")]["responses"]
    assert set(revoked) == {"204", "400", "403", "404", "405"}
    for path, op in ops.items():
        assert "422" not in op["responses"], path
        if op.get("parameters"):
            error = op["responses"]["400"]["content"]["application/json"]["schema"]
            assert error == {"$ref": "#/components/schemas/Error"}, path
        assert "401" not in op["responses"], path
    schemas = open_spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    assert schemas["Error"]["required"] == ["error"]
    assert "security" not in open_spec and "securitySchemes" not in open_spec["components"]
    assert ops["/api/v1/runs/{run_id}"]["responses"]["404"]
    weekly = ops["/api/v1/review/weekly"]["responses"]["200"]["content"]
    assert set(weekly) == {"application/json", "text/csv"}


def test_parameters_carry_the_constraints_their_parsers_enforce(open_spec: dict[str, Any]) -> None:
    params = {p["name"]: p for p in operations(open_spec)["/api/v1/runs"]["parameters"]}
    assert params["limit"]["schema"]["minimum"] == 1
    assert params["limit"]["schema"]["maximum"] == 1000
    assert params["limit"]["schema"]["default"] == 100
    assert params["verdict"]["schema"]["enum"][0] == "route_rejected"
    assert params["service"]["schema"]["maxLength"] == 256
    assert params["since"]["description"].startswith("First-seen time from")
    assert set(params) >= {"service", "since", "until", "q", "agent", "state", "sort", "ids"}


def test_with_a_token_every_operation_declares_the_bearer_scheme(
    module_collector_factory: Any,
) -> None:
    spec = module_collector_factory(env={"HANDOFFSCOPE_TOKEN": "models-token"}).api("/openapi.json")
    assert spec["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert spec["security"] == [{"bearer": []}]
    for path, op in operations(spec).items():
        assert {"401", "403"} <= set(op["responses"]), path


def test_notification_statuses_are_the_notifiers() -> None:
    assert set(models.NOTIFICATION_STATUSES) == {delivery.PENDING, delivery.SENT, delivery.FAILED}


def documented_fields(name: str) -> list[str]:
    """The top-level names of docs/api.md's `<name> = `{a, b: {...}, c}`` definition."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    (found,) = re.finditer(rf"{name} =\s*`\{{", doc)
    names, depth, word = [], 0, ""
    for ch in doc[found.end() :]:
        if ch == "}" and depth == 0:
            break
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            names.append(word)
            word = ""
        elif depth == 0 and ch != "}":
            word += ch
    return [w.split(":")[0].strip() for w in [*names, word]]


@pytest.mark.parametrize(
    ("name", "model", "besides"),
    [
        # trace_ids / conversation_ids: documented in the sentence after (with ids=true).
        ("RunSummary", models.RunSummary, {"trace_ids", "conversation_ids"}),
        ("HandoffDetail", models.HandoffDetail, set()),
        ("Notification", models.Notification, set()),
        ("Acknowledgement", models.Acknowledgement, set()),
    ],
)
def test_docs_field_lists_are_the_models(name: str, model: Any, besides: set[str]) -> None:
    """docs/api.md's definitions list the fields of the models, no more, no fewer."""
    assert set(documented_fields(name)) == set(model.model_fields) - besides
