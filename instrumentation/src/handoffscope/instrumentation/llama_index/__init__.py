"""LlamaIndex adapter: handoff evidence from `AgentWorkflow` (and agents used as tools), in two lines.

    from handoffscope.instrumentation import configure
    from handoffscope.instrumentation.llama_index import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=configure(service_name="report-writer"))

From then on every run of every `AgentWorkflow` — and of a single `FunctionAgent` /
`ReActAgent` / `CodeActAgent` run on its own — is observed, streamed or awaited. Nothing
about the workflow changes: the instrumentor adds one span handler to LlamaIndex's root
instrumentation dispatcher (`llama_index.core.instrumentation.get_dispatcher()`), where
every workflow run and step is a span; `uninstrument()` removes it. It works beside any
other LlamaIndex instrumentation (OpenInference's, Langfuse's): each handler sees the same
spans and none changes them.

Why our own adapter: the spans other instrumentations export for LlamaIndex name the agents
only inside content (messages, the `handoff` tool's arguments), so the collector, which never
reads content, cannot judge them. This adapter reads the agent names where the app declared
them (`FunctionAgent(name=..., can_handoff_to=[...])`) and sends only those.

What it sees, and what it emits (names in `semconv`):

- **A run** is one `workflow.run(...)` of an `AgentWorkflow` (or an agent's own `run()`).
  `handoff.run` at start (`run.status=started`, `gen_ai.agent.name` the root agent) and at
  end: `completed` (the run's `StopEvent`), `max_turns` (the workflow raised at its
  `max_iterations` — `run(..., max_iterations=N)`, default 20 — or, with
  `early_stopping_method="generate"`, answered because it reached it), `failed` (any other
  exception: a model call, a step, the workflow's `timeout`), with `run.final_agent` (the
  agent holding control) and `run.turns` (model turns, `AgentOutput`s). The run id is the
  uuid of LlamaIndex's own run span.
- **A handoff** is a call of the `handoff` tool `AgentWorkflow` gives each agent with a
  `can_handoff_to` (or none: any other agent). `handoff.request` when the tool is called:
  `from_agent` (the agent holding control), `to_agent` (the tool's `to_agent` argument when
  it names an agent of the workflow; else `(unknown)` — the model's text never leaves),
  `tool_call.id`, `route.declared` (is the target in the sender's `can_handoff_to`),
  `turn`, `control.before`, `fingerprint` and `state_version` (below), `kind=handoff`,
  `unobserved=["context"]` (LlamaIndex has no context contract between agents). When the
  next agent starts (its `AgentInput`), `handoff.accept` with `route.goto` and
  `control.after` (the agent that started) and `tool_call.closed` (the tool's
  `ToolCallResult` was recorded). A handoff the framework does not carry out gets a
  `handoff.transfer` naming where control went instead: LlamaIndex answers a call to an
  undeclared or unknown agent with a refusal the model reads, and the sender keeps
  control — `route.declared=false`, judged `route_rejected`; an agent with
  `can_handoff_to=[]` has no handoff tool at all, and its call is recorded with
  `handoff.reason=handoff_tool_missing`; of several handoffs asked in one turn the last
  one to run wins, and each other is `ignored_same_turn`. A handoff whose destination never
  started before the run ended (a crash, the limit) sends nothing more.
- **A delegation** (`handoff.kind=delegation`) is an agent's `run()` awaited inside another
  run's tool (the orchestrator pattern of LlamaIndex's multi-agent guide: `async def
  call_research_agent(ctx, prompt): return str(await research_agent.run(user_msg=...))`):
  requested from the agent holding control in the calling run, with the tool call's id,
  admitted when the delegate's first turn starts. Its work counts as the calling run's
  progress, its own handoffs are recorded in the calling run, and it reports no run of its
  own (its failure returns to the caller's tool as an error output, as LlamaIndex does).
- **Loops.** `fingerprint` is the keyed HMAC (`fingerprint()`) of the run's user message
  (the task; a delegation's, of the delegate's); `state_version` counts the distinct units
  of work done in the run so far — each non-handoff tool call (name + arguments), its
  result (name + output text) and each answer, as keyed HMACs (`progress.py`). Agents
  bouncing the task with no new work repeat (to_agent, fingerprint, state_version): a loop;
  bouncing until `max_iterations` ends the run `max_turns`.
- **Conversation.** A `Memory` passed to `run(memory=...)` has a `session_id`: exported as
  `gen_ai.conversation.id` (pass an opaque one, or `export_conversation_id=False`).

**Limits.** A custom `Workflow` that calls agents inside its own steps is not an agent run:
each agent run in it is a run of its own. The workflow's shared `state`, the memory and
the prompts are never read, so a context contract cannot be checked (`context` reads
`not_observed`). Human-in-the-loop waits (`InputRequiredEvent`) are not reported as waits.
A run resumed from a serialized `Context` is a new run. A tool that raises is, for
LlamaIndex, an error output the model reads, not a failure: the run goes on.

The instrumentor never raises into your workflow: its failures are logged at debug level
and counted in `handoffscope.instrumentation.stats`.

Inside the package: this module holds the settings and the instrumentor; `run.py` is what
is remembered per run; `progress.py` turns work into keyed HMACs; `handler.py` is the span
handler — the one module that imports LlamaIndex at its top, so it is imported only once
`instrument()` has found it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import TracerProvider

from ..instrumentor import HandoffInstrumentor
from ..recorder import HandoffRecorder

_log = logging.getLogger(__name__)

__all__ = ["LlamaIndexInstrumentor", "LlamaIndexSettings"]


@dataclass(frozen=True)
class LlamaIndexSettings:
    """What `instrument(**settings)` accepts. Every field is optional."""

    export_conversation_id: bool = True
    """Export the run memory's `session_id` as `gen_ai.conversation.id` (it must be opaque)."""
    require_outcome: bool = False
    """Declare that runs must be verified: the run-start span carries
    `run.outcome_required=True`, so "completed" without a passing outcome is a false completion."""


class LlamaIndexInstrumentor(HandoffInstrumentor):
    """An OpenTelemetry `BaseInstrumentor`: one instance per process, idempotent.

    A missing `llama-index-core` is logged and instrumentation skipped.
    """

    settings_type = LlamaIndexSettings
    extra = "llama-index"

    def _init(self) -> None:
        self._handler: Any = None
        self.settings = LlamaIndexSettings()

    def instrumentation_dependencies(self) -> tuple[str, ...]:
        return ("llama-index-core >= 0.14",)

    def _attach(self, tracer_provider: TracerProvider | None, settings: Any) -> bool:
        # Imported here, not at the top: LlamaIndex is an optional extra.
        from llama_index.core.instrumentation import get_dispatcher

        from .handler import HandoffSpanHandler, Observer

        self.settings = settings
        recorder = HandoffRecorder(tracer_provider or trace.get_tracer_provider())
        self._handler = HandoffSpanHandler(Observer(recorder, settings))
        get_dispatcher().add_span_handler(self._handler)
        return True

    def _detach(self) -> None:
        handler, self._handler = self._handler, None
        if handler is None:
            return
        try:
            from llama_index.core.instrumentation import get_dispatcher

            dispatcher = get_dispatcher()
            # By identity: span handlers are pydantic models, equal when their fields are.
            dispatcher.span_handlers = [h for h in dispatcher.span_handlers if h is not handler]
        except Exception:
            _log.debug("handoffscope: removing the LlamaIndex span handler failed", exc_info=True)
