"""Conversation: the runs of one conversation, turn by turn — where each started and ended.

Reached by a link from a run's detail (`conversation?conversation_id=<id>`), or by pasting
an id: the Agents SDK's `group_id`, LangGraph's `thread_id`, a foreign source's session id.
Each turn shows the agent it started at and the one holding the work when it ended, its
verdict, and how it follows the turn before (docs/semconv.md, "Turns"): **continued**,
**re-routed** (back through an entry agent to the agent that already held the work: a
model call and a handoff more per turn, and that agent's local context lost) or
**diverted** (started at an agent that is neither). A conversation's turns are not a time
window's: the whole conversation is shown, whatever the sidebar says.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import client, cost, layout, style
from handoffscope.instrumentation import semconv as sc

st.title("Conversation")

CONVERSATION_PARAM = "conversation_id"
CONVERSATION_KEY = "cv_conversation_id"


def _choose() -> None:
    value = (st.session_state.get(CONVERSATION_KEY) or "").strip()
    if value:
        st.query_params[CONVERSATION_PARAM] = value


def _pick() -> str | None:
    current = st.query_params.get(CONVERSATION_PARAM) or None
    if current and st.session_state.get(CONVERSATION_KEY) != current:
        st.session_state[CONVERSATION_KEY] = current  # arrived by a link
    st.text_input(
        "Conversation id",
        placeholder="paste a group_id, thread_id or session id",
        key=CONVERSATION_KEY,
        on_change=_choose,
    )
    if not current:
        st.caption(
            "No conversation chosen: paste its id, or open one from a run's detail "
            "(a run that is a turn of a conversation links to it)."
        )
    return current


def _turns(conv: client.Conversation) -> pd.DataFrame:
    runs = conv.runs
    return pd.DataFrame(
        {
            "Turn": runs["position"],
            "Run": [layout.run_url(r) for r in runs["run_id"]],
            "Started": [style.clock(t) for t in runs["started_at"]],
            "Started at": runs["start_agent"].fillna("—"),
            "Work with": runs["final_agent"].fillna("—"),
            "Continuity": [style.continuity_label(c) for c in runs["continuity"]],
            "Verdict": [style.verdict_label(v) for v in runs["verdict"]],
            "Handoffs": runs["handoff_count"],
            # No usage reported is "—"; reported but unpriced would read "not priced".
            "Cost": ["—" if pd.isna(c) else cost.money(c) for c in runs["cost_usd"]],
        }
    )


def _summary(conv: client.Conversation) -> None:
    counts = conv.counts
    later = conv.runs_total - counts.get(sc.CONTINUITY_FIRST, 0)
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Turns", f"{conv.runs_total:,}")
    c2.metric("Continued", f"{counts.get(sc.CONTINUITY_CONTINUED, 0):,}")
    c3.metric("Re-routed", f"{counts.get(sc.CONTINUITY_REROUTED, 0):,}")
    c4.metric("Diverted", f"{counts.get(sc.CONTINUITY_DIVERTED, 0):,}")
    bad = counts.get(sc.CONTINUITY_REROUTED, 0) + counts.get(sc.CONTINUITY_DIVERTED, 0)
    if bad:
        st.warning(
            f"{style.count(bad, 'turn')} of {style.count(later, 'later turn')} did not start "
            "with the agent that held the work: re-routed turns went back through an entry "
            "agent only to reach it again, diverted ones started at an agent that is no entry "
            "agent. Start a turn at the previous turn's final agent (the Agents SDK's "
            "`result.last_agent`; LangGraph's swarm keeps it in `active_agent`).",
            icon=":material/alt_route:",
        )


with layout.guard():
    conversation_id = _pick()
    if conversation_id:
        conv = client.conversation(conversation_id)
        st.markdown(f"### {style.md(conv.conversation_id)}")
        _summary(conv)
        layout.table(
            _turns(conv),
            column_config={"Run": layout.run_link_column()},
            key="cv_turns",
        )
        layout.capped(len(conv.runs), conv.runs_total, "turn")
