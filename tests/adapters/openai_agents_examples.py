"""The OpenAI Agents SDK's own example shapes, scripted and offline, for the topology tests.

Each mirrors one of the SDK's `examples/` (same agents, handoffs and tools; the model is the
SDK's `ScriptedModel`): `agent_patterns/agents_as_tools.py` (an orchestrator calling
translator agents as tools: delegations, not handoffs), `customer_service/main.py` (triage
hands to the FAQ or seat-booking agent, which hand back), `handoffs/message_filter.py` (a
handoff with an input filter). Plus the failure shapes issue 10 names: agents bouncing
while repeating the same tool call, two handoffs in one turn, a handoff the agent does not
have (the SDK raises), and a tool that crashes the run. `agent_patterns/parallelization.py`
and `parallel_customers` run several `Runner.run` at once under one `trace()`: each is its
own run. `SENTINEL` is planted in every prompt, argument and output.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from agents import Agent, ItemHelpers, RunConfig, Runner, function_tool, handoff, trace
from agents.extensions import handoff_filters
from agents.testing import ScriptedModel, assistant_message, function_call
from openai_agents_scenarios import config, planted

from handoffscope.instrumentation.openai_agents import OpenAIAgentsInstrumentor


async def agents_as_tools(inst: OpenAIAgentsInstrumentor, *, repeat: bool = False) -> str:
    """agent_patterns/agents_as_tools.py: the orchestrator translates through two agents.

    With `repeat`, it asks the Spanish agent the same question twice in a row, doing nothing
    else: a repeated delegation.
    """
    spanish = Agent(
        name="spanish_agent",
        instructions=planted("translate to Spanish"),
        model=ScriptedModel([[assistant_message(planted("hola"))]] * 3),
    )
    french = Agent(
        name="french_agent",
        instructions=planted("translate to French"),
        model=ScriptedModel([[assistant_message(planted("bonjour"))]]),
    )
    ask = {"input": planted("hello")}
    turns: list[Any] = [
        [
            function_call("translate_to_spanish", ask, call_id="call_s1"),
            function_call("translate_to_french", ask, call_id="call_f1"),
        ]
    ]
    if repeat:
        # Only Spanish, asked again with nothing done in between.
        turns = [[function_call("translate_to_spanish", ask, call_id=f"call_s{i}")] for i in (1, 2)]
    turns.append([assistant_message(planted("done"))])
    orchestrator = Agent(
        name="orchestrator_agent",
        instructions=planted("use the tools"),
        model=ScriptedModel(turns),
        tools=[
            spanish.as_tool(tool_name="translate_to_spanish", tool_description="To Spanish."),
            french.as_tool(tool_name="translate_to_french", tool_description="To French."),
        ],
    )
    trace_id, run_config = config(True, group="conv-tools")
    result = await Runner.run(orchestrator, planted("translate hello"), run_config=run_config)
    inst.record_outcome(result, "translation_checked", True)
    return trace_id


@function_tool
def faq_lookup_tool(question: str) -> str:
    """Look up frequently asked questions."""
    return planted("faq-answer") + question


@function_tool
def update_seat(confirmation_number: str, new_seat: str) -> str:
    """Update the seat for a given confirmation number."""
    return planted("seat-updated") + confirmation_number + new_seat


async def customer_service(inst: OpenAIAgentsInstrumentor) -> str:
    """customer_service/main.py: triage -> FAQ (answers) -> triage -> seat booking."""
    model = ScriptedModel(
        [
            [function_call("transfer_to_faq_agent", {}, call_id="call_c1")],
            [function_call("faq_lookup_tool", {"question": planted("bags")}, call_id="call_c2")],
            [function_call("transfer_to_triage_agent", {}, call_id="call_c3")],
            [function_call("transfer_to_seat_booking_agent", {}, call_id="call_c4")],
            [
                function_call(
                    "update_seat",
                    {"confirmation_number": planted("conf"), "new_seat": "12A"},
                    call_id="call_c5",
                )
            ],
            [assistant_message(planted("seat changed"))],
        ]
    )
    faq = Agent(name="faq_agent", model=model, tools=[faq_lookup_tool])
    seat = Agent(name="seat_booking_agent", model=model, tools=[update_seat])
    triage = Agent(
        name="triage_agent",
        instructions=planted("route the customer"),
        model=model,
        handoffs=[faq, handoff(agent=seat)],
    )
    faq.handoffs.append(triage)
    seat.handoffs.append(triage)
    trace_id, run_config = config(True, group="conv-airline")
    result = await Runner.run(triage, planted("bags, then my seat"), run_config=run_config)
    inst.record_outcome(result, "seat_updated", True, receipt_id="rcpt-seat")
    return trace_id


async def message_filter(inst: OpenAIAgentsInstrumentor) -> str:
    """handoffs/message_filter.py: the handoff to the Spanish agent drops tool items."""
    model = ScriptedModel(
        [
            [function_call("faq_lookup_tool", {"question": planted("q")}, call_id="call_m1")],
            [function_call("transfer_to_spanish_agent", {}, call_id="call_m2")],
            [assistant_message(planted("hola"))],
        ]
    )
    spanish = Agent(name="spanish_agent", model=model)
    first = Agent(
        name="first_agent",
        model=model,
        tools=[faq_lookup_tool],
        handoffs=[handoff(spanish, input_filter=handoff_filters.remove_all_tools)],
    )
    trace_id, run_config = config(True, group="conv-filter")
    result = await Runner.run(first, planted("hola"), run_config=run_config)
    inst.record_outcome(result, "answered", True)
    return trace_id


async def bounce(inst: OpenAIAgentsInstrumentor, *, same_work: bool) -> str:
    """a -> b -> a -> b, each running `faq_lookup_tool` before handing on: with the same
    question and answer every time (no new work: a loop), or a new one each time."""
    steps: list[Any] = [[function_call("transfer_to_agent_b", {}, call_id="call_b0")]]
    for i in range(1, 5):
        question = planted("same") if same_work else planted(f"q{i}")
        steps.append([function_call("faq_lookup_tool", {"question": question}, call_id=f"c{i}")])
        target = "transfer_to_agent_a" if i % 2 else "transfer_to_agent_b"
        steps.append([function_call(target, {}, call_id=f"call_b{i}")])
    steps.append([assistant_message(planted("final"))])
    model = ScriptedModel(steps)
    a = Agent(name="agent_a", model=model, tools=[faq_lookup_tool])
    b = Agent(name="agent_b", model=model, tools=[faq_lookup_tool], handoffs=[a])
    a.handoffs = [b]
    trace_id, run_config = config(True)
    result = await Runner.run(a, planted("bounce"), run_config=run_config, max_turns=20)
    inst.record_outcome(result, "answer_checked", True)
    return trace_id


async def missing_handoff(inst: OpenAIAgentsInstrumentor) -> str:
    """triage has billing only; the model calls transfer_to_refunds: the SDK raises."""
    model = ScriptedModel([[function_call("transfer_to_refunds", {}, call_id="call_x1")]])
    billing = Agent(name="billing", model=model)
    triage = Agent(name="triage", model=model, handoffs=[billing])
    trace_id, run_config = config(True)
    try:
        await Runner.run(triage, planted("refund"), run_config=run_config)
    except Exception as exc:  # ModelBehaviorError: "Tool transfer_to_refunds not found"
        assert "not found" in str(exc)
    else:
        raise AssertionError("the SDK should refuse a handoff the agent does not have")
    return trace_id


@function_tool(failure_error_function=None)
def charge_card(order: str) -> str:
    """Charge the card (raises: the payment service is down)."""
    raise RuntimeError(planted("payment service down"))


async def crashed(inst: OpenAIAgentsInstrumentor) -> str:
    """triage -> billing (healthy), whose tool raises out of the run: the run failed."""
    model = ScriptedModel(
        [
            [function_call("transfer_to_billing", {}, call_id="call_k1")],
            [function_call("charge_card", {"order": planted("o")}, call_id="call_k2")],
        ]
    )
    billing = Agent(name="billing", model=model, tools=[charge_card])
    triage = Agent(name="triage", model=model, handoffs=[billing])
    trace_id, run_config = config(True)
    try:
        await Runner.run(triage, planted("pay"), run_config=run_config)
    except Exception:
        pass
    else:
        raise AssertionError("the crashing tool should end the run with an exception")
    return trace_id


async def completed_without_verifier(inst: OpenAIAgentsInstrumentor) -> str:
    """triage -> billing, answered; the app records no outcome."""
    model = ScriptedModel(
        [
            [function_call("transfer_to_billing", {}, call_id="call_v1")],
            [assistant_message(planted("done"))],
        ]
    )
    billing = Agent(name="billing", model=model)
    triage = Agent(name="triage", model=model, handoffs=[billing])
    trace_id, run_config = config(True)
    await Runner.run(triage, planted("help"), run_config=run_config)
    return trace_id


@dataclass
class Parallel:
    """What a parallel example hands back: its SDK trace id and each `Runner.run`'s answer
    (a result, or the exception it raised), in the order the app started them."""

    trace_id: str
    answers: list[Any]


async def parallelization() -> Parallel:
    """agent_patterns/parallelization.py: the Spanish agent three times at once in one
    trace, then the picker chooses the best translation (in that same trace)."""
    spanish_agent = Agent(
        name="spanish_agent",
        instructions=planted("You translate the user's message to Spanish"),
        model=ScriptedModel(
            [[assistant_message(planted(f"buenos dias {i}"))] for i in (1, 2, 3)],
            emit_traces=True,
        ),
    )
    translation_picker = Agent(
        name="translation_picker",
        instructions=planted("You pick the best Spanish translation from the given options."),
        model=ScriptedModel(
            [[assistant_message(planted("best: buenos dias 2"))]], emit_traces=True
        ),
    )
    msg = planted("Good morning!")
    # Ensure the entire workflow is a single trace (the example's own words).
    with trace("Parallel translation") as current:
        res_1, res_2, res_3 = await asyncio.gather(
            Runner.run(spanish_agent, msg),
            Runner.run(spanish_agent, msg),
            Runner.run(spanish_agent, msg),
        )
        outputs = [
            ItemHelpers.text_message_outputs(res_1.new_items),
            ItemHelpers.text_message_outputs(res_2.new_items),
            ItemHelpers.text_message_outputs(res_3.new_items),
        ]
        translations = "\n\n".join(outputs)
        best_translation = await Runner.run(
            translation_picker,
            f"Input: {msg}\n\nTranslations:\n{translations}",
        )
    return Parallel(current.trace_id, [res_1, res_2, res_3, best_translation])


async def parallel_customers() -> Parallel:
    """Three customers routed at once in one trace, by the same triage and billing agents:
    the first is handed to billing and answered; billing's card charge crashes the second's
    run; triage answers the third itself. Each run gets its own scripted model
    (`RunConfig.model`), as each customer gets their own model answers. The scripted models
    here emit generation spans, as a real model's calls do: with the SDK's default
    `trace_include_sensitive_data`, those carry every prompt and answer."""
    billing = Agent(name="billing", tools=[charge_card])
    triage = Agent(name="triage", instructions=planted("route the customer"), handoffs=[billing])
    scripts: list[list[Any]] = [
        [
            [function_call("transfer_to_billing", {}, call_id="call_p1")],
            [assistant_message(planted("invoice sent"))],
        ],
        [
            [function_call("transfer_to_billing", {}, call_id="call_p2")],
            [function_call("charge_card", {"order": planted("o-2")}, call_id="call_p3")],
        ],
        [[assistant_message(planted("opening hours"))]],
    ]
    with trace("Customer routing") as current:
        answers = await asyncio.gather(
            *(
                Runner.run(
                    triage,
                    planted(f"customer {i}"),
                    run_config=RunConfig(model=ScriptedModel(script, emit_traces=True)),
                )
                for i, script in enumerate(scripts, start=1)
            ),
            return_exceptions=True,
        )
    return Parallel(current.trace_id, list(answers))
