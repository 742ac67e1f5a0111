"""Handoff evidence from an OpenAI Agents SDK app, in two lines.

    from handoffscope.instrumentation import configure
    from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=configure(service_name="support-bot"))

From then on every `Runner.run` / `run_sync` / `run_streamed` reports its run, each
handoff (request + transfer on one span, admission of the destination on another), loops
(a ping-pong without tool progress), `max_turns`, and the SDK's "multiple handoffs in one
turn" as a rejected route — see `processor.py` for the exact mapping. The SDK's own
tracing must be on (it is by default): the adapter is a `TracingProcessor` added beside
the app's processors; pass `replace_processors=True` to make it the only one (e.g. to stop
the SDK's default export to OpenAI).

A run is one top-level `Runner.run` / `run_sync` / `run_streamed` call, also when several
share one `with trace(...)` or run at once (`asyncio.gather`, as in the SDK's
`agent_patterns/parallelization.py`): each has its own `handoff.run_id` — the trace id for
a trace's first run, `<trace id>-<n>` for its n-th — its own handoffs, status and final
agent, so one branch crashing fails that run only. `run_id(result)` (or of the exception a
run raised) is the id of the run that produced it; the `record_*` helpers below use it. A
run resumed from its `RunState` keeps its id.

Nothing the model or the user wrote is read: only agent names, SDK ids, counts and error
codes. That holds whatever `RunConfig.trace_include_sensitive_data` says.

Three facts only the app knows get one-line helpers, all keyed by the result or state the
app already holds:

    result = await Runner.run(triage, task)
    if result.interruptions:                      # a needs_approval tool is waiting
        store(result.to_state().to_string())
        instrumentor.record_interruptions(result, owner="billing-team",
                                          reason="refund_approval", deadline=in_4h,
                                          state_persisted=True)
    ...
    state = await RunState.from_string(triage, stored)
    for item in state.get_interruptions():
        state.approve(item)
    instrumentor.record_decision(state, approved=True)
    result = await Runner.run(triage, state)
    instrumentor.record_outcome(result, "ticket_updated", passed=True, receipt_id="rcpt-9")

A run that claims `completed` without a passing outcome is a `false_complete`
(docs/architecture.md, Verdicts) once the service has reported any outcome, or when
declared (`require_outcome=True`, or the collector's `--require-outcome`); until then it is
`unverified` (not a failure).

Topologies: an agent used as a tool (`Agent.as_tool`) is a *delegation*, not a handoff —
control stays with the caller — recorded with `handoff.kind = delegation`, admitted at
once, judged for repeats. Several handoffs asked for in one turn: the SDK takes the first;
each ignored one is recorded with `handoff.reason = ignored_same_turn`. A call to a handoff
tool (`transfer_to_<agent>`) the agent does not have makes the SDK raise: recorded as that
handoff on an undeclared route (`handoff_tool_missing`) and the run as `failed`. Progress
(`state_version`) counts distinct tool calls (keyed digests of name, input and output), so
agents bouncing while repeating the same call are a loop. What SDK spans cannot show
(tool protocol, context) is sent as `handoff.unobserved` and reads `not_observed`.

Settings (`instrument(**settings)`, see `OpenAIAgentsSettings`): `replace_processors`,
`run_id_source` ("trace": one handoffscope run per `Runner.run`, named after its SDK
trace, the default; "group": per `RunConfig.group_id`, e.g. a whole conversation),
`observe_runner`, `count_history`, `require_outcome`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import TracerProvider

from .. import semconv as sc
from ..instrumentor import HandoffInstrumentor
from ..recorder import HandoffRecorder, names
from ..stats import stats, swallowed

_log = logging.getLogger(__name__)

__all__ = ["OpenAIAgentsInstrumentor", "OpenAIAgentsSettings"]


@dataclass(frozen=True)
class OpenAIAgentsSettings:
    """What `instrument(**settings)` accepts."""

    replace_processors: bool = False
    """Make our processor the SDK's only one (`set_trace_processors`) instead of adding it
    beside the app's (`add_trace_processor`). `uninstrument()` puts the old list back."""
    run_id_source: str = "trace"
    """`handoff.run_id` from the SDK trace id ("trace": `<trace id>-<n>` for the n-th run
    sharing a trace) or from `RunConfig.group_id` ("group": every run of the group is one,
    falling back to the trace id when a run has no group)."""
    observe_runner: bool = True
    """Wrap the SDK's default runner to tell an approval pause from a completion."""
    count_history: bool = True
    """Wrap handoff input filters to count the history items forwarded."""
    require_outcome: bool = False
    """Declare that every run's completion must be proven by a verifier (`record_outcome`):
    a run that completes without a passing one is then a false completion even before the
    service has reported any outcome (otherwise it is `unverified`)."""
    entry_agents: tuple[str, ...] = ()
    """The agents a conversation's turn may start at (a triage, a supervisor), declared on
    every run's start (`run.entry_agents`): a turn that starts at one and goes straight to
    the agent that ended the previous turn is re-routed (docs/semconv.md, "Turns").
    Without it the collector learns them from the conversations' first runs."""


class OpenAIAgentsInstrumentor(HandoffInstrumentor):
    """An OpenTelemetry `BaseInstrumentor`: one instance per process, idempotent.

    `instrument()` never raises into the app for runtime problems; a missing
    `openai-agents` package is logged and instrumentation skipped (as BaseInstrumentor does).
    """

    settings_type = OpenAIAgentsSettings
    extra = "openai-agents"

    def _init(self) -> None:
        self._recorder: HandoffRecorder | None = None
        self._processor: Any = None
        self._saved_processors: list[Any] | None = None
        self._filters: Any = None
        self._runner: Any = None
        self._runner_inner: Any = None
        self.settings = OpenAIAgentsSettings()

    def instrumentation_dependencies(self) -> tuple[str, ...]:
        return ("openai-agents >= 0.20",)

    def _attach(self, tracer_provider: TracerProvider | None, settings: Any) -> bool:
        # Imported here, not at the top: the SDK is an optional extra.
        from agents.tracing import add_trace_processor, get_trace_provider, set_trace_processors

        from .processor import RUN_ID_FROM_GROUP, RUN_ID_FROM_TRACE, HandoffTracingProcessor

        if settings.run_id_source not in (RUN_ID_FROM_TRACE, RUN_ID_FROM_GROUP):
            raise ValueError(
                f"run_id_source must be {RUN_ID_FROM_TRACE!r} or {RUN_ID_FROM_GROUP!r}"
            )
        self.settings = settings
        provider = tracer_provider or trace.get_tracer_provider()
        self._recorder = HandoffRecorder(provider)
        self._processor = HandoffTracingProcessor(
            self._recorder,
            tracer_provider=provider,
            run_id_source=settings.run_id_source,
            require_outcome=settings.require_outcome,
            entry_agents=names(settings.entry_agents) or (),
        )
        try:
            if settings.replace_processors:
                self._saved_processors = _current_processors(get_trace_provider())
                set_trace_processors([self._processor])
            else:
                self._saved_processors = None
                add_trace_processor(self._processor)
        except Exception:
            # An SDK whose tracing API moved: report nothing rather than break the app.
            stats.error()
            _log.warning("handoffscope: cannot attach to the SDK's tracing", exc_info=True)
            return False
        if settings.count_history:
            self._install_filters()
        if settings.observe_runner:
            self._install_runner()
        return True

    def _detach(self) -> None:
        try:
            from agents.tracing import get_trace_provider, set_trace_processors

            if self._saved_processors is not None:
                set_trace_processors(self._saved_processors)
            else:
                current = _current_processors(get_trace_provider())
                if current is not None:
                    set_trace_processors([p for p in current if p is not self._processor])
            if self._filters is not None:
                self._filters.uninstall()
            self._uninstall_runner()
        except Exception:
            swallowed(_log, "uninstrument")
        finally:
            if self._processor is not None:
                self._processor.enabled = False
            self._processor = None
            self._filters = None
            self._saved_processors = None

    # -- the app's one-liners --------------------------------------------------------------

    @property
    def recorder(self) -> HandoffRecorder | None:
        """The recorder behind the adapter, for evidence beyond these helpers."""
        return self._recorder

    def current_run(self) -> tuple[str, str | None] | None:
        """(run id, agent) of the run whose SDK span is current here — inside a function
        tool, the run and the agent that called it; None outside a traced run."""
        try:
            return self._processor.current_run() if self._processor is not None else None
        except Exception:
            swallowed(_log, "current_run")
            return None

    def run_id(self, obj: Any) -> str | None:
        """`handoff.run_id` of a `RunResult`, `RunResultStreaming`, `RunState`, or of the
        exception a run raised (e.g. `MaxTurnsExceeded`)."""
        try:
            from .runner import RUN_ID_ATTR, state_run_id

            tagged = getattr(obj, RUN_ID_ATTR, None)
            if isinstance(tagged, str):
                return tagged
            # A `RunState` (never tagged: `to_state()` and `from_string` make new ones):
            # the run that paused on its approvals, else its trace's first run.
            if self._processor is not None:
                return state_run_id(self._processor, obj)
            trace_id = getattr(getattr(obj, "_trace_state", None), "trace_id", None)
            return trace_id if isinstance(trace_id, str) else None
        except Exception:
            swallowed(_log, "run_id")
            return None

    def record_interruptions(
        self,
        result_or_state: Any,
        *,
        owner: str | None,
        reason: str | None = None,
        deadline: datetime | float | int | None = None,
        resume_token_id: str | None = None,
        state_persisted: bool | None = None,
        handoff_id: str | None = None,
    ) -> int:
        """Checkpoint each pending approval of a paused run as a `handoff.wait`.

        `owner` and `reason` are codes (no spaces), `deadline` a datetime or epoch time,
        `resume_token_id` an opaque id of where the state is stored (default: each
        approval's tool call id), `state_persisted` True once `to_state()` is stored.
        Returns how many waits were recorded.
        """
        from .runner import WAIT_REASON_TOOL_APPROVAL, approval_token, pending_approvals

        recorder, run_id = self._target(result_or_state)
        if recorder is None or run_id is None:
            return 0
        count = 0
        for item in pending_approvals(result_or_state):
            count += recorder.wait_checkpointed(
                run_id,
                handoff_id=handoff_id,
                owner=owner,
                reason=reason or WAIT_REASON_TOOL_APPROVAL,
                deadline=deadline,
                resume_token_id=resume_token_id or approval_token(item),
                state_persisted=state_persisted,
            )
        return count

    def record_decision(
        self,
        state_or_result: Any,
        approved: bool | str,
        *,
        items: Any = None,
        resume_token_id: str | None = None,
        handoff_id: str | None = None,
    ) -> int:
        """Record the decision on a paused run's approvals (all of them, or `items`).

        `approved`: True / False, or "approved" / "rejected" / "expired".
        Pass the same `resume_token_id` given to `record_interruptions`, if any.
        """
        from .runner import approval_token, pending_approvals

        if isinstance(approved, bool):
            decision = sc.WAIT_DECISION_APPROVED if approved else sc.WAIT_DECISION_REJECTED
        else:
            decision = approved
        recorder, run_id = self._target(state_or_result)
        if recorder is None or run_id is None:
            return 0
        pending = list(items) if items is not None else pending_approvals(state_or_result)
        count = 0
        for item in pending:
            count += recorder.wait_decided(
                run_id,
                decision,
                handoff_id=handoff_id,
                resume_token_id=resume_token_id or approval_token(item),
            )
        return count

    def record_outcome(
        self,
        result_or_state: Any,
        verifier: str,
        passed: bool,
        *,
        receipt_id: str | None = None,
        handoff_id: str | None = None,
    ) -> bool:
        """A task verifier ran on this run's result (`outcome.result` pass / fail)."""
        recorder, run_id = self._target(result_or_state)
        if recorder is None or run_id is None:
            return False
        return recorder.outcome_verified(
            run_id, verifier, passed, receipt_id=receipt_id, handoff_id=handoff_id
        )

    # -- internals -------------------------------------------------------------------------

    def _target(self, obj: Any) -> tuple[HandoffRecorder | None, str | None]:
        recorder = self._recorder
        if recorder is None:
            _log.debug("handoffscope: record_* called before instrument(); ignored")
            return None, None
        run_id = self.run_id(obj)
        if run_id is None:
            _log.debug("handoffscope: no trace on this result (SDK tracing disabled?)")
        return recorder, run_id

    def _install_filters(self) -> None:
        from .history import FilterPatch

        try:
            self._filters = FilterPatch(self._processor.note_history)
            self._filters.install()
        except Exception:
            self._filters = None
            stats.error()
            _log.debug("handoffscope: cannot count handoff history", exc_info=True)

    def _install_runner(self) -> None:
        from .runner import ObservedRunner

        try:
            import agents.run as run_module

            inner = run_module.get_default_agent_runner()
            observed = ObservedRunner(inner, self._recorder, self._processor)  # type: ignore[arg-type]
            run_module.set_default_agent_runner(observed)  # type: ignore[arg-type]
            self._runner, self._runner_inner = observed, inner
        except Exception:
            self._runner = self._runner_inner = None
            stats.error()
            _log.debug("handoffscope: cannot observe the runner", exc_info=True)

    def _uninstall_runner(self) -> None:
        if self._runner is None:
            return
        import agents.run as run_module

        # Only put the old runner back if nobody replaced ours since.
        if run_module.get_default_agent_runner() is self._runner:
            run_module.set_default_agent_runner(self._runner_inner)
        self._runner = self._runner_inner = None


def _current_processors(provider: Any) -> list[Any] | None:
    # The SDK has no public getter for its processor list (only add / set); read it so
    # uninstrument() can remove exactly ours and keep the app's.
    multi = getattr(provider, "_multi_processor", None)
    procs = getattr(multi, "_processors", None)
    return list(procs) if procs is not None else None
