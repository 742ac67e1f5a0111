"""Usage per leg from the Agents SDK: each model response's `ModelResponse.usage`.

The SDK reports what every model call cost in `ModelResponse.usage` (`input_tokens`,
`output_tokens`, `requests`) and adds it to the run's `context_wrapper.usage`. Its trace
spans carry usage only sometimes: the turn span gets the turn's total when the turn ENDS —
after the handoff span of that turn has ended, too late for the `handoff.request` that
ends the leg — and generation / response spans carry it only if the model class fills
them (the OpenAI models do, a custom or scripted `Model` need not). So the adapter reads
the response itself, in the one place the SDK hands it out for every model call of every
model: the run hooks' `on_llm_end(context, agent, response)`, which the SDK awaits right
after the call and before it runs the turn's tools and handoffs.

`ObservedRunner` (runner.py) wraps the `hooks=` of each `Runner.run` / `run_sync` /
`run_streamed` in `UsageHooks`: every hook is passed on to the app's own hooks unchanged
(and awaited as before); `on_llm_end` first sums the response into the current leg of
the run the current SDK span belongs to (`HandoffRecorder.record_usage`). The recorder
puts the leg's totals on the span that ends it (docs/semconv.md, "Usage"):

- a handoff: its `handoff.request` (the processor emits request and transfer as one span);
- the run's end (or a pause for approval): `handoff.run`.

Calls: one per response, or `usage.requests` when the SDK counted more (its retries).
Tokens: the response's; an empty `Usage()` (no request, no token counted: the model
reported nothing) leaves them unknown — the leg then carries calls without tokens.
Model: the agent's `model` when it is a name, or the `model` attribute of its `Model`
object (the OpenAI models have one; none for a `Model` without one); an agent with no
model of its own uses the run's `RunConfig.model`, else the SDK's default model. A delegation (`Agent.as_tool`) runs a nested `Runner.run` whose spans belong
to the caller's run, so the callee's calls are summed into the CALLER's leg: the caller
never gave up control. Nothing but the three counts and the model name is read from a
response — never its output items.
"""

from __future__ import annotations

import logging
from typing import Any

from agents.lifecycle import RunHooksBase

from ..stats import swallowed
from .processor import HandoffTracingProcessor

_log = logging.getLogger(__name__)


def model_name(model: Any) -> str | None:
    """The name of a model setting: a string, or a `Model` object's `model` attribute."""
    if isinstance(model, str):
        return model or None
    name = getattr(model, "model", None)
    return name if isinstance(name, str) and name else None


def default_model(run_config: Any) -> str | None:
    """The model a run uses for agents with none of their own: the run's, else the SDK's.
    A `Model` object without a name gives None: no name is better than a wrong one."""
    configured = getattr(run_config, "model", None)
    if configured is not None:
        return model_name(configured)
    try:
        from agents.models import get_default_model

        return get_default_model()
    except Exception:
        return None


class UsageHooks(RunHooksBase[Any, Any]):
    """The app's run hooks, plus summing each model response into the run's current leg."""

    def __init__(
        self, inner: Any, processor: HandoffTracingProcessor, fallback_model: str | None
    ) -> None:
        self._inner = inner
        self._processor = processor
        self._fallback_model = fallback_model

    async def on_llm_end(self, context: Any, agent: Any, response: Any) -> None:
        try:
            self._note(agent, response)
        except Exception:
            swallowed(_log, "openai-agents usage")
        if self._inner is not None:
            await self._inner.on_llm_end(context, agent, response)

    def _note(self, agent: Any, response: Any) -> None:
        usage = getattr(response, "usage", None)
        requests = getattr(usage, "requests", 0)
        calls = requests if type(requests) is int and requests > 1 else 1
        own = getattr(agent, "model", None)
        model = self._fallback_model if own is None or own == "" else model_name(own)
        input_tokens = getattr(usage, "input_tokens", None)
        output_tokens = getattr(usage, "output_tokens", None)
        if not requests and not input_tokens and not output_tokens:
            # An empty `Usage()`: the model reported nothing (not even the request), so
            # the call counts and its tokens stay unknown rather than read as 0.
            input_tokens = output_tokens = None
        self._processor.note_usage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            calls=calls,
            model=model,
        )

    def __getattr__(self, name: str) -> Any:
        # Hooks this class does not define (an SDK newer than this adapter) reach the app's.
        inner = self.__dict__.get("_inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)


def _delegating(name: str) -> Any:
    async def hook(self: UsageHooks, *args: Any, **kwargs: Any) -> Any:
        if self._inner is not None:
            return await getattr(self._inner, name)(*args, **kwargs)
        return None

    hook.__name__ = name
    return hook


# Every other hook the SDK defines is the app's, passed on unchanged.
for _name in dir(RunHooksBase):
    if _name.startswith("on_") and _name != "on_llm_end":
        setattr(UsageHooks, _name, _delegating(_name))


def wrap_hooks(kwargs: dict[str, Any], processor: HandoffTracingProcessor) -> None:
    """Replace `kwargs["hooks"]` of one runner call by `UsageHooks` around it (in place)."""
    try:
        inner = kwargs.get("hooks")
        if isinstance(inner, UsageHooks):
            return
        fallback = default_model(kwargs.get("run_config"))
        kwargs["hooks"] = UsageHooks(inner, processor, fallback)
    except Exception:
        swallowed(_log, "openai-agents usage hooks")
