"""Run detail's big-run sections: the agent path, the handoff list and the evidence timeline.

A run may hold 10,000 handoffs (the collector's `--max-handoffs-per-run`), so nothing here
draws or lists all of them: the path is drawn from the collector's *summarised* path
(repeats and cycles folded: `triage → (billing → triage) ×4,999`), the handoff table is one
page of `client.RUN_HANDOFFS_PAGE` with a pager ("showing 201–400 of 10,000"), and the
timeline plots the oldest `client.RUN_SPANS_PAGE` spans in a fixed number of plotly traces
(no shape or annotation per span or per handoff: plotly lays each one out separately,
which made a 300-handoff run take half a minute to render).

The page (views/run_detail.py) reads which handoff page is wanted with `handoffs_offset`
before it fetches the run, and draws the pager after, once it knows the total.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import charts, client, layout, style
from handoffscope.instrumentation import semconv as sc

PAGE_KEY = "rd_handoff_page"
PAGE_RUN_KEY = "rd_handoff_page_run"
PATH_CHART_MAX = 30
"""Most steps drawn as a path chart; a longer path is drawn as its folded segments."""
FAILURE_NOTES_MAX = 20
"""Unhealthy handoffs of a page spelled out in words under the table (the rest: a count)."""


def handoffs_offset(run_id: str) -> int:
    """The first handoff of the page asked for (0 for a run just opened)."""
    if st.session_state.get(PAGE_RUN_KEY) != run_id:
        st.session_state[PAGE_RUN_KEY] = run_id
        st.session_state[PAGE_KEY] = 1
    page = st.session_state.get(PAGE_KEY) or 1
    return (int(page) - 1) * client.RUN_HANDOFFS_PAGE


def page_caption(offset: int, shown: int, total: int) -> str:
    """ "Showing 201–400 of 10,000 handoffs"."""
    if total <= 0 or shown <= 0:
        return f"No handoff on this page (the run has {style.count(total, 'handoff')})."
    return f"Showing {offset + 1:,}–{offset + shown:,} of {style.count(total, 'handoff')}."


def path(run: client.RunDetail) -> None:
    st.subheader("Agent path")
    total = int(run.summary.get("path_total") or len(run.path))
    if not run.path:
        st.caption("No handoff recorded yet.")
        return
    segments = run.path_summary.get("segments") or []
    whole = len(run.path) == total
    if whole and total <= PATH_CHART_MAX:
        every = run.handoffs_total == len(run.handoffs) and len(run.path) == len(run.handoffs) + 1
        verdicts = list(run.handoffs["verdict"]) if every else []
        st.plotly_chart(charts.agent_path(run.path, step_verdicts=verdicts), key="rd_path")
        line = style.md(style.path(run.path))
    else:
        shown = segments[:PATH_CHART_MAX]
        st.plotly_chart(charts.agent_path([_segment_label(s) for s in shown]), key="rd_path")
        line = style.md(run.path_summary.get("text") or style.path(run.path))
        more = len(segments) - len(shown) + int(run.path_summary.get("segments_omitted") or 0)
        st.caption(
            f"{style.count(total, 'step')} in the path, folded where they repeat"
            + (
                f"; the chart shows the first {len(shown)} segments, {more:,} more follow."
                if more
                else "."
            )
        )
    if run.summary.get("loop") and run.loop_cycle:
        line += (
            f" · loop: **{style.md(style.path(run.loop_cycle))}**, repeated "
            f"{style.count(run.summary.get('loop_repeats') or 0, 'time')}"
        )
    st.markdown(line)


def _segment_label(segment: object) -> str:
    """One folded segment as a chart label: `billing ×40`, `(billing → triage) ×40`."""
    if not isinstance(segment, dict):
        return "?"
    agents = [style.text(a, "?") for a in segment.get("agents") or []]
    reps = segment.get("repeat") or 1
    inner = " → ".join(agents)
    if reps == 1:
        return inner
    return f"{inner} ×{reps:,}" if len(agents) == 1 else f"({inner}) ×{reps:,}"


EXTRA_BOUNDARIES = {
    sc.BOUNDARY_PROGRESS: "Progress (loop)",
    sc.BOUNDARY_WAIT: "Wait",
}
NOT_APPLICABLE = "— none"


def extra_boundary_states(h) -> dict[str, str]:
    """The two checks beside the six boundaries (docs/architecture.md, Boundaries): progress
    (a loop) and the wait checkpoint, so a loop or a broken wait never reads all green."""
    failed = style.text(h.failed_boundary)
    words = style.BOUNDARY_STATE_WORDS
    loop = bool(getattr(h, "loop", False) or False)
    if failed == sc.BOUNDARY_PROGRESS or loop:
        progress = words[style.BOUNDARY_STATE_FAILED]
    elif failed in sc.BOUNDARIES[:5] or failed == sc.BOUNDARY_RUN:
        # Checked after the destination (docs/architecture.md, Verdicts): not reached when an
        # earlier one failed.
        progress = words[style.BOUNDARY_STATE_UNKNOWN]
    else:
        progress = words[style.BOUNDARY_STATE_PASSED]
    waited = bool(getattr(h, "wait", False) or False)
    if failed == sc.BOUNDARY_WAIT:
        wait = words[style.BOUNDARY_STATE_FAILED]
    elif waited:
        wait = words[style.BOUNDARY_STATE_PASSED]
    else:
        wait = NOT_APPLICABLE
    return {
        EXTRA_BOUNDARIES[sc.BOUNDARY_PROGRESS]: progress,
        EXTRA_BOUNDARIES[sc.BOUNDARY_WAIT]: wait,
    }


def handoffs(run: client.RunDetail) -> None:
    st.subheader("Handoffs, boundary by boundary")
    total = run.handoffs_total or len(run.handoffs)
    if run.handoffs.empty and total == 0:
        st.caption("This run has no handoff yet.")
        return
    if run.summary.get("handoffs_capped"):
        cap = run.summary.get("handoff_cap")
        st.warning(
            f"This run reached the collector's cap of {style.count(cap, 'handoff')} per run: "
            "evidence of further handoffs is stored but not judged.",
            icon=":material/warning:",
        )
    pages = max(1, -(-total // client.RUN_HANDOFFS_PAGE))
    if (st.session_state.get(PAGE_KEY) or 1) > pages:  # the run shrank (retention)
        st.session_state[PAGE_KEY] = pages
    if pages > 1:
        st.number_input(f"Page (of {pages:,})", min_value=1, max_value=pages, step=1, key=PAGE_KEY)
    st.caption(page_caption(run.handoffs_offset, len(run.handoffs), total))
    if run.handoffs.empty:
        return
    rows = []
    numbers = _numbers(run)
    for n, h in zip(numbers, run.handoffs.itertuples(), strict=True):
        states = h.boundaries if isinstance(h.boundaries, dict) else {}
        row = {
            "#": n,
            "Handoff": style.edge(h.from_agent, h.to_agent),
            "Verdict": style.verdict_label(h.verdict),
        }
        for b in sc.BOUNDARIES:
            row[style.boundary_label(b)] = style.BOUNDARY_STATE_WORDS.get(
                states.get(b, style.BOUNDARY_STATE_UNKNOWN), "· no evidence"
            )
        row.update(extra_boundary_states(h))
        row["First failure"] = style.boundary_label(h.failed_boundary)
        row["Why"] = style.text(h.why)
        row["Safe next step"] = (
            style.text(h.next_step) or style.next_step(h.verdict)
            if style.is_unhealthy(h.verdict)
            else ""
        )
        rows.append(row)
    layout.table(
        pd.DataFrame(rows),
        boundary_columns=[
            *(style.boundary_label(b) for b in sc.BOUNDARIES),
            *EXTRA_BOUNDARIES.values(),
        ],
    )
    st.caption(
        "Boundaries in the order they are checked; the first that failed decides the verdict "
        "(docs/architecture.md, Verdicts), so a later green signal never hides it. "
        "“No evidence”: not reported yet, or not reached after an earlier failure."
    )
    failing = [
        (n, h)
        for n, h in zip(numbers, run.handoffs.itertuples(), strict=True)
        if style.is_unhealthy(h.verdict)
    ]
    for n, h in failing[:FAILURE_NOTES_MAX]:
        where = style.boundary_label(h.failed_boundary)
        why = style.text(h.why) or style.verdict_label(h.verdict)
        # The facts beside the cause, unless the cause already says them (it names the
        # missing keys: repeating them read "customer_tier (missing keys: customer_tier)").
        extra = []
        missing = h.missing_keys if isinstance(h.missing_keys, list) else []
        if missing and not all(str(k) in why for k in missing):
            extra.append("missing keys: " + ", ".join(map(str, missing)))
        reason = style.text(h.rejection_reason)
        if reason and reason not in why:
            extra.append("refused as " + style.reason_label(reason).lower())
        cause = why + (f" ({'; '.join(extra)})" if extra else "")
        st.markdown(
            f"**#{n} {style.md(style.edge(h.from_agent, h.to_agent))}** — failed at **{where}**: "
            f"{style.md(cause)}. "
            f"*Next:* {style.md(style.text(h.next_step) or style.next_step(h.verdict))}"
        )
    if len(failing) > FAILURE_NOTES_MAX:
        st.caption(
            f"…and {len(failing) - FAILURE_NOTES_MAX:,} more unhealthy handoffs on this page "
            "(see the table)."
        )


def _numbers(run: client.RunDetail) -> list[int]:
    """Each listed handoff's position in the whole run (the API's `seq`)."""
    out = []
    for i, seq in enumerate(run.handoffs["seq"], start=run.handoffs_offset + 1):
        out.append(int(seq) if isinstance(seq, int | float) and not pd.isna(seq) else i)
    return out


def timeline(run: client.RunDetail) -> None:
    st.subheader("Evidence timeline")
    if run.spans.empty:
        st.caption("No evidence span stored for this run.")
        return
    st.plotly_chart(
        charts.run_timeline(run.spans, run.handoffs, numbers=_numbers(run)), key="rd_timeline"
    )
    total = run.spans_total or len(run.spans)
    st.caption(
        "One marker per evidence span (hover for its contract attributes); rows are this "
        "page's handoffs in order"
        + (
            f". The oldest {len(run.spans):,} of {style.count(total, 'span')} are shown."
            if total > len(run.spans)
            else "."
        )
    )
