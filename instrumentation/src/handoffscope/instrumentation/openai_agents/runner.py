"""How each `Runner.run` ended: completed, interrupted for approval, out of turns, failed.

A run that pauses for tool approval (`needs_approval=True`) ends its SDK trace exactly
like a completed run, so only the runner's return value tells them apart
(`result.interruptions`). `ObservedRunner` wraps the SDK's default agent runner
(`agents.run.set_default_agent_runner`, the hook `Runner.run` / `run_sync` /
`run_streamed` dispatch through) and, around each call, puts a `RunHolder` in a context
variable. The tracing processor fills it with the run id and the end facts it saw in the
spans; the wrapper then emits the run's end with the status the result proves:

- `result.interruptions` non-empty -> `interrupted`, plus one `handoff.wait` per pending
  approval with what the SDK knows (reason `tool_approval`, the tool call id as resume
  token). Owner, deadline and persisted state are the app's to add
  (`OpenAIAgentsInstrumentor.record_interruptions`); until it does, the wait is honestly
  `wait_uncertain`.
- `MaxTurnsExceeded` -> `max_turns`; any other exception -> `failed`.
- otherwise `completed` (or `max_turns`, when an error handler turned the limit into a
  final output).

Each call's `hooks=` is also wrapped (usage.py) so every model response's usage is summed
into the run's current leg; the app's own hooks still receive every callback.

Each call is its own run, even when several run at once in one event loop under one SDK
trace (`asyncio.gather`, as the SDK's `agent_patterns/parallelization.py` does): the
holder lives in a context variable, and `asyncio` gives each task its own copy of the
context, so each call's holder meets only its own run's spans. Every result, and every
exception a run raises, is tagged with its run id (`OpenAIAgentsInstrumentor.run_id`). A
call given a `RunState` resumes the run that paused on that state's approvals (else its
trace's first run), so its evidence lands on the same run id.

For `run_streamed`, the end is reported when the app finishes iterating
`stream_events()`. The SDK marks its runner hook experimental; if it ever disappears,
`instrument()` skips this part and the processor reports run ends from spans alone
(an approval pause then reads as `completed`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

from .. import semconv as sc
from ..fingerprint import fingerprint
from ..recorder import HandoffRecorder
from ..stats import stats, swallowed
from .processor import CURRENT_RUN, HandoffTracingProcessor, RunHolder
from .usage import wrap_hooks

_log = logging.getLogger(__name__)

WAIT_REASON_TOOL_APPROVAL = "tool_approval"
"""`wait.reason` for a tool call that needs human approval."""

RUN_ID_ATTR = "_handoffscope_run_id"
"""Set on each result (and on a run's exception) so `record_outcome(result, ...)` finds
its run: the SDK keeps the trace id on a result only when the run was interrupted."""


class ObservedRunner:
    """Delegates to the SDK's runner; reports how each top-level run ended."""

    def __init__(
        self, inner: Any, recorder: HandoffRecorder, processor: HandoffTracingProcessor
    ) -> None:
        self.inner = inner
        self.recorder = recorder
        self.processor = processor

    def _holder(self, input: Any) -> RunHolder:
        holder = RunHolder()
        try:
            if _is_run_state(input):
                holder.resumes = state_run_id(self.processor, input)
        except Exception:
            swallowed(_log, "finding the run a RunState resumes")
        return holder

    @contextmanager
    def _observing(self, input: Any) -> Iterator[RunHolder]:
        holder = self._holder(input)
        token = CURRENT_RUN.set(holder)
        try:
            yield holder
        except BaseException as exc:
            finish_run(self.recorder, holder, error=exc, processor=self.processor)
            raise
        finally:
            CURRENT_RUN.reset(token)

    async def run(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        wrap_hooks(kwargs, self.processor)  # each model response's usage (usage.py)
        with self._observing(input) as holder:
            result = await self.inner.run(starting_agent, input, **kwargs)
        finish_run(self.recorder, holder, result=result, processor=self.processor)
        return result

    def run_sync(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        wrap_hooks(kwargs, self.processor)
        with self._observing(input) as holder:
            result = self.inner.run_sync(starting_agent, input, **kwargs)
        finish_run(self.recorder, holder, result=result, processor=self.processor)
        return result

    def run_streamed(self, starting_agent: Any, input: Any, **kwargs: Any) -> Any:
        wrap_hooks(kwargs, self.processor)
        holder = self._holder(input)
        # The SDK starts the run in a background task created inside run_streamed; that
        # task copies this context, holder included.
        token = CURRENT_RUN.set(holder)
        try:
            result = self.inner.run_streamed(starting_agent, input, **kwargs)
        finally:
            CURRENT_RUN.reset(token)
        try:
            _observe_stream(result, holder, self.recorder, self.processor)
        except Exception:
            # Could not hook the stream: let the processor report the end from spans.
            holder.delegate = False
            stats.error()
            _log.debug("handoffscope: cannot observe streamed run", exc_info=True)
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _observe_stream(
    result: Any, holder: RunHolder, recorder: HandoffRecorder, processor: HandoffTracingProcessor
) -> None:
    original = result.stream_events

    async def stream_events() -> AsyncIterator[Any]:
        finished = False
        try:
            async for event in original():
                yield event
            finished = True
        except GeneratorExit:
            # The app stopped reading early; report what the spans showed, if anything.
            if holder.facts is not None:
                finish_run(recorder, holder, result=result, processor=processor)
            raise
        except BaseException as exc:
            finish_run(recorder, holder, error=exc, processor=processor)
            raise
        if finished:
            finish_run(recorder, holder, result=result, processor=processor)

    result.stream_events = stream_events


def finish_run(
    recorder: HandoffRecorder,
    holder: RunHolder,
    *,
    result: Any = None,
    error: BaseException | None = None,
    processor: HandoffTracingProcessor | None = None,
) -> None:
    """Emit the run's end (and its pending approvals); never raises."""
    try:
        run_id = holder.run_id
        if run_id is None:
            # No top-level trace segment: tracing disabled, or a nested run (an agent used
            # as a tool) whose spans belong to the outer run.
            return
        _tag(result if result is not None else error, run_id)
        facts = holder.facts
        interruptions = list(getattr(result, "interruptions", None) or ()) if error is None else []
        if error is not None:
            status = sc.RUN_STATUS_MAX_TURNS if _is_max_turns(error) else sc.RUN_STATUS_FAILED
        elif interruptions:
            status = sc.RUN_STATUS_INTERRUPTED
        elif facts is not None and facts.status == sc.RUN_STATUS_MAX_TURNS:
            status = sc.RUN_STATUS_MAX_TURNS
        else:
            status = sc.RUN_STATUS_COMPLETED
        final_agent = _agent_name(result) if result is not None else None
        if final_agent is None and facts is not None:
            final_agent = facts.final_agent
        if processor is not None:
            processor.run_reported(run_id)
            processor.note_approvals(run_id, _trace_id(result), approval_tokens(interruptions))
        recorder.run_ended(
            run_id,
            status,
            final_agent=final_agent,
            turns=facts.turns if facts is not None else None,
        )
        for item in interruptions:
            recorder.wait_checkpointed(
                run_id,
                reason=WAIT_REASON_TOOL_APPROVAL,
                resume_token_id=approval_token(item),
            )
    except Exception:
        swallowed(_log, "reporting the run end")


def _tag(obj: Any, run_id: str) -> None:
    try:
        setattr(obj, RUN_ID_ATTR, run_id)
    except Exception:  # a result type with __slots__: record_* then falls back to the trace state
        _log.debug("handoffscope: cannot tag %s with its run id", type(obj).__name__)


def approval_token(item: Any) -> str | None:
    """An opaque resume token for one pending approval: its tool call id.

    `RunState.approve(item)` is keyed by that id, so an operator can match a wait to the
    approval the app shows. An id that is not a plain code (it should always be) is
    replaced by its keyed fingerprint rather than sent as is.
    """
    raw = getattr(item, "raw_item", item)
    call_id = _field(raw, "call_id") or _field(raw, "id")
    if not isinstance(call_id, str) or not call_id:
        return None
    if sc.CODE_PATTERN.match(call_id) and len(call_id) <= sc.MAX_ID_LEN:
        return call_id
    return fingerprint(call_id) or None


def approval_tokens(items: Any) -> tuple[str, ...]:
    return tuple(t for t in map(approval_token, items) if t is not None)


def pending_approvals(obj: Any) -> list[Any]:
    """The pending approvals of a `RunState` (`get_interruptions()`) or a result."""
    getter = getattr(obj, "get_interruptions", None)
    if callable(getter):
        return list(getter())
    return list(getattr(obj, "interruptions", None) or ())


def state_run_id(processor: HandoffTracingProcessor, obj: Any) -> str | None:
    """The run a `RunState` or an untagged result belongs to (see `run_id_for`)."""
    group_id = getattr(getattr(obj, "_trace_state", None), "group_id", None)
    return processor.run_id_for(
        _trace_id(obj),
        group_id if isinstance(group_id, str) else None,
        approval_tokens(pending_approvals(obj)),
    )


def _trace_id(obj: Any) -> str | None:
    # An interrupted result keeps its trace's state (the resumed run reattaches to it).
    trace_id = getattr(getattr(obj, "_trace_state", None), "trace_id", None)
    return trace_id if isinstance(trace_id, str) else None


def _is_run_state(obj: Any) -> bool:
    from agents import RunState

    return isinstance(obj, RunState)


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, dict):
        return obj.get(name)
    return getattr(obj, name, None)


def _agent_name(result: Any) -> str | None:
    agent = getattr(result, "last_agent", None)
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) and name else None


def _is_max_turns(error: BaseException) -> bool:
    from agents.exceptions import MaxTurnsExceeded

    return isinstance(error, MaxTurnsExceeded)
