"""A hostile batch: content attributes are dropped, counted, and absent from the file.

The spans carry sentinel strings where other instrumentations put content — prompts,
inputs, message bodies, free text in a contract field, a span event, a resource
attribute, a span that is not evidence at all. After the collector has stopped (so the
file is checkpointed and closed), no sentinel byte sequence is in any file of its
directory, nor in /metrics or the query API's answers; while a value that IS kept (the run id) is found in the file,
which shows the byte search would have seen a sentinel had one been stored.
"""

from __future__ import annotations

import secrets

from ingest_support import read_db
from opentelemetry.sdk.trace.export import SpanExportResult

from handoffscope.instrumentation import semconv as sc

CONTENT_KEYS = (
    "gen_ai.prompt",
    "gen_ai.completion",
    "input.value",
    "output.value",
    "llm.input_messages.0.message.content",
    "tool.arguments",
    "my_app.customer_note",
)


def test_hostile_batch_is_dropped_counted_and_absent_from_the_file(
    collector, otlp_sender_factory
) -> None:
    sentinels = {key: f"SENTINEL-{key}-{secrets.token_hex(12)}" for key in CONTENT_KEYS}
    free_text = f"please refund the customer SENTINEL-{secrets.token_hex(12)}"
    event_text = f"SENTINEL-event-{secrets.token_hex(12)}"
    resource_text = f"SENTINEL-resource-{secrets.token_hex(12)}"
    refused_text = f"SENTINEL-refused-{secrets.token_hex(12)}"
    run_id = f"run-visible-{secrets.token_hex(12)}"

    sender = otlp_sender_factory(
        collector, "http", service="hostile-app", **{"deployment.note": resource_text}
    )
    sender.emit(
        sc.SPAN_REQUEST,
        {
            sc.RUN_ID: run_id,
            sc.HANDOFF_ID: "h1",
            sc.FROM_AGENT: "triage",
            sc.TO_AGENT: "billing",
            sc.REASON: free_text,  # a code field carrying a sentence: refused by the pattern
            sc.TURN: "3",  # wrong type: a string where an int belongs
            **sentinels,
        },
        events=[("gen_ai.user.message", {"content": event_text})],
    )
    sender.emit("openai.chat", {sc.RUN_ID: run_id, "gen_ai.prompt": refused_text})
    assert sender.send() is SpanExportResult.SUCCESS
    assert collector.healthz()["spans_stored"] == 1

    metrics = collector.metrics_text()
    for key in (*CONTENT_KEYS, sc.REASON, sc.TURN, "content", "deployment.note"):
        assert (
            collector.metric(
                "handoffscope_attributes_dropped_total", service="hostile-app", attribute=key
            )
            == 1
        ), key
    every_sentinel = [*sentinels.values(), free_text, event_text, resource_text, refused_text]
    for text in every_sentinel:
        assert text not in metrics
    # The query API serves what was kept (the run) and the names of what was dropped.
    answers = [
        collector.get(path).text
        for path in (f"/api/v1/runs/{run_id}", "/api/v1/runs", "/api/v1/handoffs", "/api/v1/drops")
    ]
    assert run_id in answers[0]
    assert "llm.input_messages.0.message.content" in answers[3]
    for text in every_sentinel:
        assert not any(text in answer for answer in answers), text

    assert collector.stop() == 0
    files = [p for p in collector.db_path.parent.iterdir() if p.is_file()]
    assert files == [collector.db_path]  # clean close: no WAL left behind
    raw = collector.db_path.read_bytes()
    assert run_id.encode() in raw  # the search can find a stored value...
    for text in every_sentinel:
        assert text.encode() not in raw, text  # ...and finds no sentinel
        assert text.split("SENTINEL-", 1)[1].encode() not in raw

    drops = dict(
        ((service, attribute), count)
        for service, attribute, count in read_db(collector.store, "SELECT * FROM drops")
    )
    assert drops[("hostile-app", "gen_ai.prompt")] == 1
    assert drops[("hostile-app", "llm.input_messages.0.message.content")] == 1
    row = read_db(
        collector.store, "SELECT handoff_reason, handoff_turn, handoff_to_agent FROM spans"
    )
    assert row == [(None, None, "billing")]


def test_a_retried_export_does_not_count_its_drops_twice(collector, otlp_sender_factory) -> None:
    """An exporter whose first answer was lost re-sends the export: spans and drops count once."""
    sender = otlp_sender_factory(collector, "http", service="retrying-app")
    sender.emit(sc.SPAN_RUN, {sc.RUN_ID: "retry-1", sc.RUN_STATUS: "started", "input.value": "x"})
    spans = sender.take()
    assert sender.send(spans) is SpanExportResult.SUCCESS
    assert sender.send(spans) is SpanExportResult.SUCCESS  # the retry
    drops = {
        (d["service"], d["attribute"]): d["count"] for d in collector.api("/api/v1/drops")["drops"]
    }
    assert drops[("retrying-app", "input.value")] == 1
    assert collector.healthz()["spans_stored"] == 1
