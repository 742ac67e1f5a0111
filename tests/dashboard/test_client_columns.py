"""The dashboard's column lists name fields the collector really answers.

`client.py` keeps, for each frame it builds, the columns the frame has even when an
answer is empty. The dashboard does not install the collector (it talks HTTP), so it
cannot import the answer models; instead every name it lists is looked up here in the
schema of that answer in the `/openapi.json` a real collector serves (generated from
the models). A renamed or removed field fails this test, not an operator's page.
"""

from __future__ import annotations

from typing import Any

import pytest

from handoffscope.dashboard import client

RUN = "/api/v1/runs/{run_id}"

# Each column list of the client: where its rows come from (operation path, then the
# keys down to the list of rows, or to the object itself).
SOURCES: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "RUN_COLUMNS": [("/api/v1/runs", ("runs",))],
    "RUN_LIST_COLUMNS": [("/api/v1/runs", ("runs",))],
    "HANDOFF_COLUMNS": [(RUN, ("first_failure",)), (RUN, ("handoffs",))],
    "UNHEALTHY_COLUMNS": [("/api/v1/live", ("unhealthy",)), ("/api/v1/handoffs", ("handoffs",))],
    "RUN_HANDOFF_COLUMNS": [(RUN, ("handoffs",))],
    "IN_FLIGHT_COLUMNS": [("/api/v1/live", ("runs_in_flight",))],
    "EDGE_COLUMNS": [("/api/v1/edges", ("edges",))],
    "LOOP_COLUMNS": [("/api/v1/loops", ("loops",))],
    "APPROVAL_COLUMNS": [("/api/v1/approvals", ("approvals",)), (RUN, ("waits",))],
    "FALSE_COMPLETION_COLUMNS": [("/api/v1/false_completions", ("runs",))],
    "OUTCOME_COLUMNS": [(RUN, ("outcomes",))],
    "SPAN_COLUMNS": [(RUN, ("spans",))],
    "TIMELINE_COLUMNS": [("/api/v1/live", ("timeline",))],
    "WEEK_COLUMNS": [("/api/v1/review/weekly", ("weeks",))],
    "BY_REASON_COLUMNS": [("/api/v1/review/weekly", ("by_reason",))],
    "BY_EDGE_COLUMNS": [("/api/v1/review/weekly", ("by_edge",))],
    "BY_AGENT_COLUMNS": [("/api/v1/review/weekly", ("by_agent",))],
    "BY_EDGE_REASON_COLUMNS": [("/api/v1/review/weekly", ("by_edge_reason",))],
    "SPEND_COLUMNS": [("/api/v1/review/weekly", ("spend",))],
    "CONTINUITY_COLUMNS": [("/api/v1/review/weekly", ("continuity",))],
    "CONVERSATION_RUN_COLUMNS": [("/api/v1/conversations/{conversation_id}", ("runs",))],
    "DROP_COLUMNS": [("/api/v1/drops", ("drops",))],
    "SOURCE_COLUMNS": [("/api/v1/sources", ("sources",))],
    "TRANSLATOR_COLUMNS": [("/api/v1/sources", ("translators",))],
    "_RUN_LISTS": [(RUN, ())],
}


def column_lists() -> dict[str, list[str]]:
    """Every `*_COLUMNS` list of the client (and the run's list keys), by name."""
    found = {
        name: list(value)
        for name, value in vars(client).items()
        if (name.endswith("_COLUMNS") and isinstance(value, list)) or name == "_RUN_LISTS"
    }
    assert found, "the client has no column lists any more: update this test"
    return found


def resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with `$ref`s followed and a nullable `anyOf [X, null]` read as X."""
    while True:
        if "$ref" in schema:
            schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        elif "anyOf" in schema:
            (schema,) = [s for s in schema["anyOf"] if s.get("type") != "null"]
        elif schema.get("type") == "array":
            schema = schema["items"]
        else:
            return schema


def row_schema(spec: dict[str, Any], path: str, keys: tuple[str, ...]) -> dict[str, Any]:
    ok = spec["paths"][path]["get"]["responses"]["200"]
    schema = resolve(spec, ok["content"]["application/json"]["schema"])
    for key in keys:
        assert key in schema["properties"], (path, keys, key)
        schema = resolve(spec, schema["properties"][key])
    return schema


@pytest.fixture(scope="module")
def spec(module_collector_factory: Any) -> dict[str, Any]:
    served: dict[str, Any] = module_collector_factory().api("/openapi.json")
    return served


def test_every_column_list_is_tied_to_an_answer() -> None:
    assert set(column_lists()) == set(SOURCES)


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_columns_are_properties_of_the_served_schema(spec: dict[str, Any], name: str) -> None:
    columns = column_lists()[name]
    for path, keys in SOURCES[name]:
        properties = row_schema(spec, path, keys)["properties"]
        missing = [c for c in columns if c not in properties]
        assert not missing, f"{name}: {missing} not in the answer of {path} {keys}"


def test_time_columns_are_times_somewhere(spec: dict[str, Any]) -> None:
    """Every column the client parses as a time is a property of some answer."""
    names = {
        prop
        for schema in spec["components"]["schemas"].values()
        for prop in schema.get("properties", {})
    }
    assert names >= client.TIME_COLUMNS, client.TIME_COLUMNS - names


def test_a_misspelled_column_would_fail(spec: dict[str, Any]) -> None:
    """The check above can fail: a name the answer does not carry is reported."""
    properties = row_schema(spec, "/api/v1/runs", ("runs",))["properties"]
    assert "run_id" in properties and "runid" not in properties
