"""Handoff evidence from a CrewAI app, in two lines.

    from handoffscope.instrumentation import configure
    from handoffscope.instrumentation.crewai import CrewAIInstrumentor

    CrewAIInstrumentor().instrument(tracer_provider=configure(service_name="support-crew"))

From then on every `Crew.kickoff` (and its async and `for_each` forms) reports its run,
each delegation between its agents and, in a sequential crew, each task handed over from
one agent to the next — see `listener.py` for which CrewAI event gives which
evidence. The adapter listens on CrewAI's own event bus (`crewai_event_bus`); it patches
nothing, and CrewAI's own telemetry settings do not matter to it.

What a run is: one kickoff; `handoff.run_id` is CrewAI's id of that kickoff's started
event (a `Crew` object kicked off twice is two runs). CrewAI has no session or thread id,
so no `gen_ai.conversation.id` is sent.

Delegations, not handoffs: CrewAI agents work together through two tools, "Delegate work
to coworker" and "Ask question to coworker" — in a hierarchical crew
(`Process.hierarchical`) the manager has them for every agent, and any agent with
`allow_delegation=True` has them for the others. The coworker runs inside the tool call
and its answer goes back to the caller, who keeps the task and control, so each call is a
`handoff.kind = delegation`: requested when the tool starts (from the calling agent's
role to the coworker's), admitted when the coworker starts. The tasks of a crew are not
handed over by these tools, so none of this is a `handoff` of control.

Task handovers (`Process.sequential`): CrewAI runs the crew's tasks in order, each by its
own agent, and gives each task the output of the tasks before it as its context (all of
them by default; those in its `context=[...]` when it names some; none with
`context=[]`). When a task's agent is not the agent whose task completed last, that is a
`handoff` of the work: requested when the task starts (from the previous task's agent to
this one's, `route.declared` — the crew's task order is the only route CrewAI takes),
admitted when its agent starts. An agent going on with its own next task hands nothing
over. The agent that crashes on the task it was handed was still handed it: the handover
reads healthy and the run `failed` (`run_failed`); a task that ended before its agent
started is `destination_not_started`.

What a handover carries is free text (the previous outputs), and CrewAI lets a task declare
WHICH tasks' outputs it takes but not which facts it needs from them: there are no
required keys, so the context boundary is `not_observed` and no handover reads
`context_incomplete`, not even one whose task takes no context (`context=[]`: the app
chose that) or whose context task answered nothing. Asynchronous tasks (`async_execution=True`) are handed over from the agent whose task
completed last when they start, which is CrewAI's order, not necessarily their context's.

Routes: the declared coworkers of an agent are the crew's other agents (what CrewAI's
delegation tools accept). A model that names an agent the crew does not have gets
CrewAI's "coworker not found" answer, and nobody starts: recorded as a delegation on an
undeclared route, with no destination named (the model's text is not sent) and the
destination not started — `route_rejected`.

Loops: `handoff.fingerprint` is a keyed HMAC of what the delegation asks (tool, task or
question, context; the coworker's name left out) within its run, and
`handoff.state_version` counts the distinct results of the run's other tools (keyed
HMACs of name, arguments and output). A manager that asks the same coworker the same
thing again with no tool work in between is therefore repeating itself (`loop`), while
asking again after new work is not. CrewAI's own guards: a call with the same input as the
agent's previous call is refused without running (no tool event, so nothing to judge); a
tool call repeated with the same arguments and result `MAX_REPEATED_TOOL_CALLS` times (5
in CrewAI 1.15) raises `ToolExecutionFailedError`, which fails the kickoff: such a run
reads `failed`, its repeats `loop`. An agent reaching `max_iter` is forced to a final
answer, which CrewAI's events do not mark: that run reads `completed`.

Failures: CrewAI's delegation tool catches a coworker's exception (after the agent's
`max_retry_limit` retries) and gives the caller the error text as the tool's answer, so a
crashing coworker does not end the run; the run is `failed` when the crew's kickoff fails
(`CrewKickoffFailedEvent`), whatever agent raised.

Nothing the model or the user wrote is sent: only agent roles (the app's own names),
CrewAI's ids, counts and keyed HMACs. What events cannot show (the caller's control, the
tool protocol, a context contract) is sent as `handoff.unobserved` and reads `not_observed`.

Settings: none yet (`CrewAISettings` is empty; unknown names raise `TypeError`).
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

__all__ = ["CrewAIInstrumentor", "CrewAISettings"]


@dataclass(frozen=True)
class CrewAISettings:
    """What `instrument(**settings)` accepts (nothing yet)."""


class CrewAIInstrumentor(HandoffInstrumentor):
    """An OpenTelemetry `BaseInstrumentor`: one instance per process, idempotent.

    `instrument()` never raises into the app for runtime problems; a missing `crewai`
    package is logged and instrumentation skipped (as BaseInstrumentor does).
    """

    settings_type = CrewAISettings
    extra = "crewai"

    def _init(self) -> None:
        self._recorder: HandoffRecorder | None = None
        self._listener: Any = None
        self.settings = CrewAISettings()

    def instrumentation_dependencies(self) -> tuple[str, ...]:
        return ("crewai >= 1.15",)

    def _attach(self, tracer_provider: TracerProvider | None, settings: Any) -> bool:
        # Imported here, not at the top: CrewAI is an optional extra.
        from .listener import HandoffListener

        self.settings = settings
        self._recorder = HandoffRecorder(tracer_provider or trace.get_tracer_provider())
        try:
            self._listener = HandoffListener(self._recorder)
        except Exception:
            # A CrewAI whose event API moved: report nothing rather than break the app.
            _log.warning("handoffscope: cannot listen to CrewAI's events", exc_info=True)
            self._listener = None
            return False
        return True

    def _detach(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()

    @property
    def recorder(self) -> HandoffRecorder | None:
        """The recorder behind the adapter, for evidence beyond CrewAI's events."""
        return self._recorder
