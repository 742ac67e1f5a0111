"""Run detail: one run, handoff by handoff — which boundary failed first, and why.

For the on-call engineer, reached by a link: `run_detail?run_id=<id>` (every other page links
here). Shows the run's verdict and safe next step, the agent path (arrows coloured by each
handoff's verdict), a timeline of its evidence spans, and for each handoff the six
boundaries — route, control, tool protocol, context, destination, result — with the first
failing one highlighted and the reason in words. Without a run id, it offers the newest
runs in the sidebar's window to pick from.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import charts, client, layout, notified, style
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


def _header(run: client.RunDetail) -> None:
    s = run.summary
    verdict = s.get("verdict")
    # HTML for the badge (our own markup); the run id is inert Markdown like every value
    # from the wire — inside raw <code> Markdown would still be parsed.
    st.markdown(
        f"### {style.md(s.get('run_id'))} {layout.verdict_badge(verdict)}",
        unsafe_allow_html=True,
    )
    step = style.md(s.get("next_step")) or style.next_step(verdict)
    if style.is_unhealthy(verdict):
        st.error(
            f"**{style.verdict_label(verdict)}.** Safe next step: {step}", icon=":material/error:"
        )
    elif verdict in (sc.WAITING_ON_APPROVAL, sc.IN_FLIGHT):
        st.info(f"**{style.verdict_label(verdict)}.** {step}", icon=":material/hourglass_top:")
    elif verdict == sc.UNVERIFIED:
        st.warning(
            f"**{style.verdict_label(verdict)}.** {style.md(s.get('why')) or ''} {step}",
            icon=":material/help:",
        )
    else:
        st.success(
            f"**{style.verdict_label(verdict)}.** Every observed boundary passed.",
            icon=":material/check_circle:",
        )
    if s.get("source_label"):  # translated from another instrumentation's spans
        st.caption(f":material/input: From {style.md(s.get('source_label'))} spans")
    if s.get("not_observed"):
        st.caption(style.md(s.get("not_observed")))
    if style.is_unhealthy(verdict) and s.get("why"):
        st.caption("First failure: " + style.md(s.get("why")))

    started, ended = s.get("started_at"), s.get("ended_at")
    last = s.get("last_seen_at")
    span = (
        (ended or last) - started if started is not None and (ended or last) is not None else None
    )
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Status", style.status_label(s.get("status")))
    c2.metric("Turns", style.count(s.get("turns"), "turn"))
    c3.metric("Handoffs", style.count(len(run.handoffs), "handoff"))
    c4.metric("Duration", style.duration(span.total_seconds()) if span is not None else "—")
    who = s.get("final_agent") or s.get("current_agent")
    st.caption(
        f"Service **{style.md(s.get('service')) or '—'}** · started {style.clock(started)} · "
        f"last evidence {style.clock(last)}"
        + (f" · ended {style.clock(ended)}" if ended is not None else "")
        + (f" · work with **{style.md(who)}**" if who else "")
    )


def _path(run: client.RunDetail) -> None:
    st.subheader("Agent path")
    if not run.path:
        st.caption("No handoff recorded yet.")
        return
    verdicts = list(run.handoffs["verdict"]) if len(run.path) == len(run.handoffs) + 1 else []
    st.plotly_chart(charts.agent_path(run.path, step_verdicts=verdicts), key="rd_path")
    line = style.md(style.path(run.path))
    if run.summary.get("loop") and run.loop_cycle:
        line += f" · loop: **{style.md(style.path(run.loop_cycle))}**, repeated {style.count(run.summary.get('loop_repeats') or 0, 'time')}"
    st.markdown(line)


def _boundaries(run: client.RunDetail) -> None:
    st.subheader("Handoffs, boundary by boundary")
    if run.handoffs.empty:
        st.caption("This run has no handoff yet.")
        return
    rows = []
    for i, h in enumerate(run.handoffs.itertuples(), start=1):
        states = h.boundaries if isinstance(h.boundaries, dict) else {}
        row = {
            "#": i,
            "Handoff": style.edge(h.from_agent, h.to_agent),
            "Verdict": style.verdict_label(h.verdict),
        }
        for b in sc.BOUNDARIES:
            row[style.boundary_label(b)] = style.BOUNDARY_STATE_WORDS.get(
                states.get(b, style.BOUNDARY_STATE_UNKNOWN), "· no evidence"
            )
        row["First failure"] = style.boundary_label(h.failed_boundary)
        row["Why"] = style.text(h.why)
        row["Safe next step"] = (
            style.text(h.next_step) or style.next_step(h.verdict)
            if style.is_unhealthy(h.verdict)
            else ""
        )
        rows.append(row)
    view = pd.DataFrame(rows)
    layout.table(view, boundary_columns=[style.boundary_label(b) for b in sc.BOUNDARIES])
    st.caption(
        "Boundaries in the order they are checked; the first that failed decides the verdict "
        "(DESIGN §4), so a later green signal never hides it. “No evidence”: not reported yet, "
        "or not reached after an earlier failure."
    )
    for i, h in enumerate(run.handoffs.itertuples(), start=1):
        if not style.is_unhealthy(h.verdict):
            continue
        where = style.boundary_label(h.failed_boundary)
        extra = []
        if isinstance(h.missing_keys, list) and h.missing_keys:
            extra.append("missing keys: " + ", ".join(h.missing_keys))
        if style.text(h.rejection_reason):
            extra.append("refused as " + style.reason_label(h.rejection_reason).lower())
        tail = f" ({'; '.join(extra)})" if extra else ""
        st.markdown(
            f"**#{i} {style.md(style.edge(h.from_agent, h.to_agent))}** — failed at **{where}**: "
            f"{style.md(style.text(h.why) or style.verdict_label(h.verdict))}{style.md(tail)}. "
            f"*Next:* {style.md(style.text(h.next_step) or style.next_step(h.verdict))}"
        )


def _timeline(run: client.RunDetail) -> None:
    st.subheader("Evidence timeline")
    if run.spans.empty:
        st.caption("No evidence span stored for this run.")
        return
    st.plotly_chart(charts.run_timeline(run.spans, run.handoffs), key="rd_timeline")
    st.caption(
        "One marker per evidence span (hover for its contract attributes); rows are handoffs in order."
    )


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
        detail = client.run(run_id)
        _header(detail)
        _path(detail)
        _boundaries(detail)
        _timeline(detail)
        _outcomes_and_waits(detail)
