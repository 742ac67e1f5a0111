"""Run detail: one run, handoff by handoff — which boundary failed first, and why.

For the on-call engineer, reached by a link: `run_detail?run_id=<id>` (every other page links
here). Shows the run's verdict and safe next step, the agent path (arrows coloured by each
handoff's verdict), a timeline of its evidence spans, and for each handoff the six
boundaries — route, control, tool protocol, context, destination, result — with the first
failing one highlighted and the reason in words. Without a run id, it offers the newest
runs in the sidebar's window to pick from.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pandas as pd
import streamlit as st

from handoffscope.dashboard import (
    acknowledge,
    client,
    cost,
    layout,
    notified,
    run_sections,
    style,
)
from handoffscope.instrumentation import semconv as sc

st.title("Run detail")
filters = layout.current_filters()

RUN_ID_PARAM = "run_id"
RUN_ID_KEY = "rd_run_id"
RECENT_KEY = "rd_recent"


def _choose(key: str) -> None:
    """Widget callback: the chosen run goes into the URL (so the page can be shared) and
    into the run-id box (so the box shows what the page shows)."""
    value = (st.session_state.get(key) or "").strip()
    if value:
        st.query_params[RUN_ID_PARAM] = value
        st.session_state[RUN_ID_KEY] = value


def _pick_run() -> str | None:
    """The run from the URL (`?run_id=`); a box to paste one and a list of recent runs."""
    current = st.query_params.get(RUN_ID_PARAM) or None
    if current and st.session_state.get(RUN_ID_KEY) != current:
        st.session_state[RUN_ID_KEY] = current  # arrived by a link: show its id in the box
    recent = client.runs(filters.service, filters.window_seconds, limit=50)
    left, right = st.columns(2)
    left.text_input(
        "Run id",
        placeholder="paste a run id",
        key=RUN_ID_KEY,
        on_change=_choose,
        args=(RUN_ID_KEY,),
    )
    if not recent.empty:
        ranked = recent.assign(_rank=[sc.RANK.get(v, 99) for v in recent["verdict"]]).sort_values(
            ["_rank", "last_seen_at"], ascending=[True, False]
        )
        verdicts = dict(zip(ranked["run_id"], ranked["verdict"], strict=True))
        right.selectbox(
            "Recent runs, unhealthy first",
            list(ranked["run_id"]),
            index=None,
            placeholder="pick a run",
            format_func=lambda r: f"{r} · {style.verdict_label(verdicts.get(r))}",
            key=RECENT_KEY,
            on_change=_choose,
            args=(RECENT_KEY,),
        )
    if current:
        return current
    if recent.empty:
        layout.empty_state(
            "No runs to show",
            filters,
            "Open a run from another page, paste its id above, or widen the time window.",
        )
    else:
        st.caption("No run chosen: paste a run id, or pick one of the recent runs.")
    return None


# --- header: the verdict in one line, the run's facts, loop and wait evidence ----------


def _first_failure(run: client.RunDetail) -> Any:
    """The handoff whose failure decides the run's verdict (the first with that verdict):
    the collector's `first_failure`, which may be on another page of a big run's handoffs,
    else the first on this page."""
    verdict = run.summary.get("verdict")
    first = run.summary.get("first_failure")
    if isinstance(first, dict) and style.text(first.get("failed_boundary")):
        return SimpleNamespace(**first)
    for h in run.handoffs.itertuples():
        if h.verdict == verdict and style.text(h.failed_boundary):
            return h
    return None


def headline(run: client.RunDetail) -> str:
    """The run's verdict in one line of words: which edge, which boundary, what to do."""
    s = run.summary
    verdict = s.get("verdict")
    label = style.verdict_label(verdict)
    step = style.md(s.get("next_step")) or style.next_step(verdict)
    h = _first_failure(run)
    if h is not None:
        where = (
            f"at **{style.md(style.edge(h.from_agent, h.to_agent))}**, boundary "
            f"**{style.boundary_label(h.failed_boundary)}**"
        )
        # The facts of the deciding handoff, not the rule (under "Why is this …?").
        why = style.md(run_sections.handoff_cause(h, run))
        return f"**{label}** {where}: {why}. **Do:** {style.md(style.text(h.next_step)) or step}"
    why = style.md(s.get("why"))
    if style.is_unhealthy(verdict):
        return f"**{label}**: {why}. **Do:** {step}"
    if verdict == sc.UNVERIFIED:
        return f"**{label}**: {why}. {step}"
    if verdict in (sc.WAITING_ON_APPROVAL, sc.IN_FLIGHT):
        return f"**{label}**. {step}"
    return f"**{label}**. Every observed boundary passed."


def _running(s: dict) -> bool:
    return s.get("ended_at") is None and s.get("status") in (None, sc.RUN_STATUS_STARTED)


def _header(run: client.RunDetail) -> None:
    s = run.summary
    verdict = s.get("verdict")
    # HTML for the badge (our own markup); the run id is inert Markdown like every value
    # from the wire — inside raw <code> Markdown would still be parsed.
    st.markdown(
        f"### {style.md(s.get('run_id'))} {layout.verdict_badge(verdict)}",
        unsafe_allow_html=True,
    )
    line = headline(run)
    if style.is_unhealthy(verdict):
        st.error(line, icon=":material/error:")
    elif verdict in (sc.WAITING_ON_APPROVAL, sc.IN_FLIGHT):
        st.info(line, icon=":material/hourglass_top:")
    elif verdict == sc.UNVERIFIED:
        st.warning(line, icon=":material/help:")
    else:
        st.success(line, icon=":material/check_circle:")
    if s.get("source_label"):  # translated from another instrumentation's spans
        st.caption(f":material/input: From {style.md(s.get('source_label'))} spans")
    if s.get("not_observed"):
        st.caption(style.md(s.get("not_observed")))

    started, ended = s.get("started_at"), s.get("ended_at")
    last = s.get("last_seen_at")
    running = _running(s)
    end = pd.Timestamp.now(tz="UTC") if running else (ended or last)
    span = end - started if started is not None and end is not None else None
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Status", "Running" if running else style.status_label(s.get("status")))
    c2.metric("Turns", style.count(s.get("turns"), "turn"))
    c3.metric("Handoffs", style.count(run.handoffs_total or len(run.handoffs), "handoff"))
    c4.metric(
        "Running for" if running else "Duration",
        style.duration(span.total_seconds()) if span is not None else "—",
    )
    who = s.get("final_agent") or s.get("current_agent")
    ids = []
    if s.get("conversation_ids"):
        ids.append("conversation " + ", ".join(style.md(c) for c in s["conversation_ids"][:3]))
    if s.get("trace_ids"):
        more = len(s["trace_ids"]) - 1
        ids.append(
            "trace "
            + layout.trace_ref(s["trace_ids"][0])
            + (f" (+{more} more)" if more > 0 else "")
        )
    st.caption(
        f"Service **{style.md(s.get('service')) or '—'}** · started {style.clock(started)} · "
        f"last evidence {style.clock(last)}"
        + (" · still running" if running else "")
        + (f" · ended {style.clock(ended)}" if ended is not None else "")
        + (f" · work with **{style.md(who)}**" if who else "")
        + "".join(f" · {i}" for i in ids)
    )
    _turn(run)
    _cost(run)
    _what_happened(run)
    _wait_evidence(run)


def turn_line(s: dict[str, Any]) -> str | None:
    """Where this turn of its conversation started and how it follows the one before, in
    words (None: the run is no turn of a conversation)."""
    conversation = s.get("conversation_id")
    if not conversation:
        return None
    start, final = s.get("start_agent"), s.get("final_agent") or s.get("current_agent")
    position = s.get("conversation_position")
    where = f"Turn {position}" if position else "A turn"
    line = (
        f"**{where}** of conversation {style.md(conversation)}: started at "
        f"**{style.md(start) or '—'}**, work with **{style.md(final) or '—'}**"
    )
    continuity = s.get("continuity")
    previous = style.md(s.get("previous_final_agent")) or "—"
    if continuity == sc.CONTINUITY_REROUTED:
        line += (
            f". **Re-routed:** the previous turn ended with **{previous}**, and this one went "
            f"back through **{style.md(start)}** only to be sent to **{previous}** again — "
            "a model call and a handoff more, and that agent's local context lost. Start "
            "the next turn at the agent that held the work."
        )
    elif continuity == sc.CONTINUITY_DIVERTED:
        line += (
            f". **Diverted:** the previous turn ended with **{previous}**, and this one "
            f"started at **{style.md(start)}**, which is no entry agent."
        )
    elif continuity:
        line += f" · {style.continuity_label(continuity).lower()}"
    return line


def _turn(run: client.RunDetail) -> None:
    line = turn_line(run.summary)
    if line is None:
        return
    if run.summary.get("continuity") in (sc.CONTINUITY_REROUTED, sc.CONTINUITY_DIVERTED):
        st.warning(line, icon=":material/alt_route:")
    else:
        st.caption(line)
    # A page link, not a Markdown one: it opens the page in this tab, filters kept.
    conversation = str(run.summary.get("conversation_id"))
    st.page_link(
        "views/conversation.py",
        label=f"Open conversation {style.md(conversation)}",
        icon=":material/forum:",
        query_params={"conversation_id": conversation},
    )


def _cost(run: client.RunDetail) -> None:
    """What the run's model calls cost (every leg summed), and for a looping run what the
    loop burned from its first repeat on: cost where the decision to stop it is made."""
    s = run.summary
    usage = cost.usage_of(s.get("usage"))
    line = f"**Cost:** {cost.line(usage, markdown=True)}"
    loop = cost.usage_of(s.get("loop_usage"))
    if loop is not None:
        n = cost.total_tokens(loop)
        line += (
            f" — the loop burned {cost.tokens(n)} tokens ({cost.inert(cost.price(loop))}) "
            "after its first repeat"
        )
    st.markdown(line, help=_unpriced_help(usage, loop))


def _unpriced_help(*usages: dict[str, Any] | None) -> str | None:
    models = sorted({m for u in usages for m in cost.unpriced_models(u)})
    if not models:
        return None
    return (
        "Not priced: the collector's price table has no price for "
        + ", ".join(models)
        + " (or a call reported no token counts)."
    )


def _what_happened(run: client.RunDetail) -> None:
    """The run's failure in its own facts (the cycle, its agents and the turns it burned;
    the missing key; the refusal; how long it took and how it ended), then the rule that
    judged it, once, collapsed: the operator reads what happened here first."""
    verdict = run.summary.get("verdict")
    lines = run_sections.story(run, _first_failure(run))
    if lines:
        st.markdown("\n".join(f"- {line}" for line in lines))
    rule = run_sections.definition(verdict)
    if rule:
        with st.expander(f"Why is this “{style.verdict_label(verdict)}”?", icon=":material/help:"):
            st.markdown(rule)


def _wait_evidence(run: client.RunDetail) -> None:
    """Who the run waits on, and until when."""
    w = run.waits
    if w.empty:
        return
    parts = []
    for row in w.itertuples():
        owner = style.md(row.owner) if style.text(row.owner) else "**nobody** (no owner)"
        parts.append(
            f"{style.verdict_label(row.verdict)}: {owner} — deadline {style.clock(row.deadline)} "
            f"({style.time_left(row.seconds_left)})"
        )
    st.markdown("**Waiting on:** " + "; ".join(parts))


def _outcomes_and_waits(run: client.RunDetail) -> None:
    left, right = st.columns(2)
    with left:
        st.subheader("Verifier outcomes")
        if run.outcomes.empty:
            st.caption("No verifier ran for this run.")
        else:
            o = run.outcomes
            layout.table(
                pd.DataFrame(
                    {
                        "When": [style.clock(t) for t in o["at"]],
                        "Verifier": o["verifier"].fillna("?").to_numpy(),
                        "Result": [
                            "✓ pass" if r == sc.OUTCOME_PASS else "✗ fail" for r in o["result"]
                        ],
                        "Receipt": o["receipt_id"].fillna("").to_numpy(),
                    }
                )
            )
    with right:
        st.subheader("Waits")
        if run.waits.empty:
            st.caption("No open or expired wait on a person in this run.")
        else:
            w = run.waits
            layout.table(
                pd.DataFrame(
                    {
                        "Status": [style.verdict_label(v) for v in w["verdict"]],
                        "Owner": w["owner"].fillna("— none —").to_numpy(),
                        "Reason": w["reason"].fillna("— none —").to_numpy(),
                        "Time left": [style.time_left(s) for s in w["seconds_left"]],
                        "Notified": [notified.summary(n) for n in w["notifications"]],
                    }
                ),
                verdict_columns=("Status",),
            )
        if run.notifications:
            st.caption(f"Notifications: {notified.summary(run.notifications)}")


with layout.guard():
    run_id = _pick_run()
    if run_id:
        # One page of the run's handoffs (a run may hold 10,000): run_sections draws the
        # path, the handoff list and the timeline so that their cost stays bounded.
        detail = client.run(run_id, run_sections.handoffs_offset(run_id))
        _header(detail)
        acknowledge.run_panel(detail)
        run_sections.path(detail)
        run_sections.handoffs(detail)
        run_sections.timeline(detail)
        _outcomes_and_waits(detail)
