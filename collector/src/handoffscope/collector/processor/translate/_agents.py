"""Evidence shapes shared by the translators of OpenAI Agents SDK spans.

Every instrumentation of the Agents SDK wraps the SDK's own trace: one workflow span per
`Runner.run` (the root of its trace), one agent span per agent turn sequence, one handoff
span when a handoff runs. What they record differs (docs/foreign-spans.md); what the SDK
itself does not record anywhere is the same for all of them, and decides two rules here:

- The workflow span never carries the run's failure: the SDK records `MaxTurnsExceeded`
  (and exceptions) on the *agent* span it happened in and closes the workflow span as if
  all were well. So the workflow span's end only says "completed" as of the workflow's
  START, and a failure recorded inside it — which ends later than that — wins the run's
  status (the judge keeps the latest status). `run.started` carries the true start.
- An agent span that ends in error says how the run ended: `max_turns` when the error
  is the SDK's turn limit (matched, never copied), `failed` otherwise.
"""

from __future__ import annotations

from handoffscope.collector.processor.translate.base import ERROR, Evidence, ForeignSpan, run_span
from handoffscope.instrumentation import semconv as sc

MAX_TURNS_TEXT = "Max turns exceeded"
"""What the SDK's MaxTurnsExceeded says, in every instrumentation's rendering of it."""


def workflow_end(span: ForeignSpan) -> Evidence:
    status = sc.RUN_STATUS_FAILED if span.status == ERROR else sc.RUN_STATUS_COMPLETED
    ev = run_span(**{sc.RUN_STATUS: status, sc.RUN_STARTED: span.start_ns})
    if status == sc.RUN_STATUS_COMPLETED:
        ev.start_ns = ev.end_ns = span.start_ns
    return ev


def agent_end(span: ForeignSpan, agent: str, *error_texts: str | None) -> Evidence:
    """Run facts of one agent span: it may be the final agent; its error ends the run."""
    attrs: dict[str, object] = {sc.RUN_FINAL_AGENT: agent}
    if span.status == ERROR:
        texts = (span.status_description, *error_texts)
        max_turns = any(t and MAX_TURNS_TEXT in t for t in texts)
        attrs[sc.RUN_STATUS] = sc.RUN_STATUS_MAX_TURNS if max_turns else sc.RUN_STATUS_FAILED
    return run_span(**attrs)


def handoff_id(source_prefix: str, span: ForeignSpan) -> str:
    """A handoff id derived from the span that carries the handoff: stable across re-sends
    and unique in its trace."""
    return f"{source_prefix}-{span.span_id}"
