"""Privacy: a hostile client floods the collector with content; none of it is kept or shown.

The client is as bad as a real app with other instrumentations can be: the real OTel SDK
exporter (OTLP/HTTP protobuf, gzip, and gRPC) plus hand-built protobuf and OTLP/JSON for
what the SDK will not send, carrying SENTINEL in
- the content attributes other GenAI instrumentations emit (`gen_ai.prompt`,
  `gen_ai.input.messages`, `input.value`, `llm.input_messages.0.message.content`, ...)
  and arbitrary application keys;
- contract attributes whose value breaks the contract (free text where a code belongs,
  key names that are sentences, values past their length bound);
- an attribute KEY that is a sentence, and one past the 64-character name bound;
- resource, scope, span-event and link attributes, event names, the status message;
- whole spans of other instrumentations (not evidence: refused).

SENTINEL must appear nowhere: not in the DuckDB file (raw bytes of the file and its WAL,
and every text column of every table read back through DuckDB, which may compress
strings on disk), not in any /api/v1 answer, /metrics or /healthz, not in the collector's
log, and not on any dashboard page (the real Streamlit app under AppTest reading the
collector). CONTROL, a legitimate agent name sent beside it, must be found by the same
scans — proof that they look where the data is. The drops are counted per service and
attribute name in /api/v1/drops and /metrics.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status
from support.dashboard import APP, PAGES
from support.evidence import request_attributes
from support.otlp import (
    JSON,
    PROTOBUF,
    export_request,
    gzipped,
    key_values,
    otlp_span,
    to_otlp_json,
)
from support.privacy import assert_content_free

from handoffscope.collector.processor.allowlist import UNREADABLE_NAME
from handoffscope.instrumentation import semconv as sc

SENTINEL = "zqxPRIVACYsentinel83c1"
"""In no contract name, code or id: any occurrence anywhere is leaked content."""
CONTROL = "zqxcontrol-agent"
"""A legitimate agent name: the scans must find it, or they are looking in the wrong place."""

CONTENT_KEYS = (
    "gen_ai.prompt",
    "gen_ai.completion",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "input.value",
    "output.value",
    "llm.input_messages.0.message.content",
    "llm.output_messages.0.message.content",
    "tool.parameters",
    "http.request.body",
    "my_app.customer_note",
)
SENTENCE_KEY = f"the user said {SENTINEL} about the refund"
LONG_KEY = "k" * 60 + SENTINEL  # code-like but past the 64-character name bound


def content_attributes(where: str) -> dict[str, Any]:
    """Content under every key above, plus contract names carrying what breaks the contract."""
    attrs: dict[str, Any] = {key: f"{SENTINEL} {where} {key}" for key in CONTENT_KEYS}
    attrs.update(
        {
            sc.REASON: f"{SENTINEL} because the customer asked nicely",  # a code: no spaces
            sc.FINGERPRINT: f"{SENTINEL} refund order 123",
            sc.CONTEXT_REQUIRED_KEYS: [f"{SENTINEL} order id"],
            sc.WAIT_OWNER: f"{SENTINEL} the manager",
            sc.FROM_AGENT: SENTINEL * 10,  # past the 128-character bound
        }
    )
    return attrs


HOSTILE_DROPPED = (
    *CONTENT_KEYS,
    sc.REASON,
    sc.FINGERPRINT,
    sc.CONTEXT_REQUIRED_KEYS,
    sc.WAIT_OWNER,
    sc.FROM_AGENT,
)
"""Keys each hostile evidence span loses, one value each."""


def hostile_evidence(run_id: str, n: int, where: str) -> dict[str, Any]:
    attrs = request_attributes(run_id, f"h{n}")
    attrs[sc.TO_AGENT] = CONTROL
    attrs.update(content_attributes(where))
    return attrs


# --- the hostile client --------------------------------------------------------------------


def send_with_sdk(
    sender_factory: Any,
    collector: Any,
    protocol: str,
    service: str,
    run_id: str,
    spans: int,
    compression: str | None = None,
) -> None:
    """The real SDK exporter; resource attributes and events carry content too."""
    sender = sender_factory(
        collector,
        protocol,
        service,
        compression=compression,
        **{"process.command_line": f"python app.py --prompt '{SENTINEL}'"},
    )
    for n in range(spans):
        sender.emit(
            sc.SPAN_REQUEST,
            hostile_evidence(run_id, n, protocol),
            events=[("gen_ai.content.prompt", {"gen_ai.prompt": f"{SENTINEL} event"})],
        )
    sender.emit("openai.chat", {"gen_ai.prompt": f"{SENTINEL} foreign", sc.RUN_ID: run_id})
    assert sender.send().name == "SUCCESS"


def raw_hostile_request(service: str, run_id: str, spans: int):
    """What no SDK sends: a sentence as a key, scope/link attributes, status message."""
    built = []
    for n in range(spans):
        attrs = hostile_evidence(run_id, 100 + n, "raw")
        attrs[SENTENCE_KEY] = "x"
        attrs[LONG_KEY] = "x"
        span = otlp_span(sc.SPAN_TRANSFER, attrs)
        span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=f"{SENTINEL} failed"))
        span.trace_state = f"vendor={SENTINEL}"
        span.events.add(name=f"{SENTINEL} event name", time_unix_nano=span.end_time_unix_nano)
        span.links.add(
            trace_id=span.trace_id,
            span_id=span.span_id,
            attributes=key_values({"input.value": SENTINEL}),
        )
        built.append(span)
    foreign = otlp_span(f"{SENTINEL} span name", {sc.RUN_ID: run_id, "input.value": SENTINEL})
    foreign.kind = Span.SPAN_KIND_CLIENT
    request = export_request(
        [*built, foreign], service=service, resource_attributes={"host.note": SENTINEL}
    )
    # A scope NAME is shown (GET /api/v1/sources, the log) when it reads as a library's
    # name, as a service name is; free text there — a sentence — is never repeated.
    request.resource_spans[0].scope_spans[0].scope.CopyFrom(
        InstrumentationScope(
            name=f"refund my order {SENTINEL} scope",
            attributes=key_values({"gen_ai.prompt": SENTINEL}),
        )
    )
    return request


def flood(collector: Any, sender_factory: Any) -> dict[str, Counter]:
    """Send everything; return the drops expected per service: {service: Counter(key -> n)}."""
    expected: dict[str, Counter] = {}
    for protocol, compression, service in (
        ("http", None, "hostile-http"),
        ("http", "gzip", "hostile-http"),
        ("grpc", None, "hostile-grpc"),
    ):
        send_with_sdk(
            sender_factory, collector, protocol, service, f"run-{service}", 3, compression
        )
        drops = expected.setdefault(service, Counter())
        for key in HOSTILE_DROPPED:
            drops[key] += 3
        drops["gen_ai.prompt"] += 3  # the event attribute
        drops["process.command_line"] += 1
    drops = expected.setdefault("hostile-raw", Counter())
    for encode, content_type, headers in (
        (lambda r: r.SerializeToString(), PROTOBUF, {}),
        (lambda r: gzipped(to_otlp_json(r)), JSON, {"Content-Encoding": "gzip"}),
    ):
        raw = raw_hostile_request("hostile-raw", "run-hostile-raw", 2)
        response = collector.post_traces(encode(raw), content_type, headers=headers)
        assert response.status_code == 200, response.text
        for key in HOSTILE_DROPPED:
            drops[key] += 2
        drops[UNREADABLE_NAME] += 2 * 2  # the sentence key and the long key, on each span
        drops["gen_ai.prompt"] += 1  # the scope's attribute
        drops["host.note"] += 1  # the resource's
    return expected


# --- where content could surface ---------------------------------------------------------


def test_hostile_content_reaches_no_file_api_metrics_or_log(
    collector: Any, otlp_sender_factory: Any
) -> None:
    expected = flood(collector, otlp_sender_factory)

    # The evidence itself was kept: the run is there, with its (legitimate) destination.
    run = collector.api("/api/v1/runs/run-hostile-http")
    assert [h["to_agent"] for h in run["handoffs"]] == [CONTROL] * 3

    assert CONTROL in collector.get("/api/v1/runs/run-hostile-http").text

    # Drops are counted per service and attribute NAME, in the API and in /metrics.
    drops = Counter()
    for row in collector.api("/api/v1/drops")["drops"]:
        drops[(row["service"], row["attribute"])] += row["count"]
    metrics = collector.metrics_text()
    for service, keys in expected.items():
        for key, n in keys.items():
            assert drops[(service, key)] == n, (service, key)
            assert (
                collector.metric(
                    "handoffscope_attributes_dropped_total", service=service, attribute=key
                )
                == n
            )
    assert SENTINEL not in metrics

    # Every answer, log line, file byte and stored value (read back: DuckDB compresses).
    assert_content_free(collector, SENTINEL, stored=CONTROL)


# --- the dashboard --------------------------------------------------------------------------


def rendered(at: Any) -> str:
    """Every element of the page as protobuf text (what the browser is sent), and every
    table's cells as CSV (inside the protobuf they are Arrow bytes)."""
    parts = [str(node.proto) for node in (*at.main, *at.sidebar)]
    for df in at.dataframe:
        value = df.value
        parts.append(getattr(value, "data", value).to_csv())
    return "\n".join(parts)


def test_dashboard_shows_no_content_but_shows_the_drops(
    collector: Any, otlp_sender_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("streamlit")
    from streamlit.testing.v1 import AppTest

    from handoffscope.dashboard.config import ENV_API, ENV_TOKEN

    flood(collector, otlp_sender_factory)
    monkeypatch.setenv(ENV_API, collector.http_endpoint)
    monkeypatch.delenv(ENV_TOKEN, raising=False)
    pages = {}
    for page in PAGES:
        at = AppTest.from_file(str(APP), default_timeout=60)
        at.run()
        if page != "live":
            at.switch_page(f"views/{page}.py")
        if page == "run_detail":
            at.query_params["run_id"] = "run-hostile-http"
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        pages[page] = rendered(at)
    assert CONTROL in pages["run_detail"]
    for page, text in pages.items():
        assert SENTINEL not in text, page
    # The operator sees that content was dropped, and from which service.
    assert "gen_ai.prompt" in pages["live"]
    assert "hostile-http" in pages["live"]
