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

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from handoffscope.dashboard import charts, client, cost, layout, style
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
    repeats = repeats_of(run.handoffs, numbers)
    timing = handoff_timing(run)
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
        # The leg this handoff gave its destination (its model calls until the next one).
        row["Leg cost"] = cost.cell(_get(h, "usage"))
        row["First failure"] = style.boundary_label(h.failed_boundary)
        row["Why"] = handoff_cause(h, run, repeats.get(n)) if style.is_unhealthy(h.verdict) else ""
        admitted, held = timing.get(style.text(h.handoff_id), (None, None))
        row["Requested"] = style.clock(_stamp(h.requested_at))
        row["Admitted after"] = style.duration(admitted)
        row["Held for"] = style.duration(held)
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
        "“No evidence”: not reported yet, or not reached after an earlier failure. "
        "Admitted after: from the request to the destination's admission; held for: from "
        "the request to the next handoff (or the run's end). Leg cost: the tokens and "
        "dollars of the model calls the destination made with the work (“not priced”: a "
        "model the price table lacks; “—”: none reported)."
    )
    failing = [
        (n, h)
        for n, h in zip(numbers, run.handoffs.itertuples(), strict=True)
        if style.is_unhealthy(h.verdict)
    ]
    for n, h in failing[:FAILURE_NOTES_MAX]:
        where = style.boundary_label(h.failed_boundary)
        # The facts of this handoff, not the rule: a loop's `why` is the rule's definition,
        # the same on every looping handoff (it stands once, under "Why is this …?").
        cause = handoff_cause(h, run, repeats.get(n))
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


# --- what happened: the run's failure in its own facts, the rule behind a click ---------

RULES: dict[str, tuple[int, str]] = {
    v.name: (v.rule, v.fails_when) for v in sc.VERDICT_TABLE if v.rule is not None
}
"""Each failure verdict's rule: its number and when it fails, from the one verdict table
(`semconv.VERDICT_TABLE`, which docs/architecture.md's table is rendered from). The page
shows it once, collapsed, under the facts of what happened."""

RULES_SOURCE = "docs/architecture.md, Verdicts"


def definition(verdict: object) -> str | None:
    """The rule that made `verdict`, in Markdown, for the "Why is this …?" expander."""
    rule = RULES.get(style.text(verdict))
    if rule is None:
        return None
    number, when = rule
    label = style.verdict_label(verdict)
    return (
        f"**Rule {number} of {len(RULES)}, {label}:** fails when {when}. "
        f"The rules are checked in order and the first that fails decides, so a later green "
        f"signal never hides an earlier failure ({RULES_SOURCE}, where the edge cases of "
        f"particular sources are spelled out). Safe next step: {style.next_step(verdict)}"
    )


def _stamp(value: object) -> pd.Timestamp | None:
    if value is None or (not isinstance(value, pd.Timestamp) and not style.text(value)):
        return None
    ts = pd.to_datetime(value, utc=True, format="ISO8601", errors="coerce")
    return None if pd.isna(ts) else ts


def _since(a: object, b: object) -> float | None:
    """Seconds from `a` to `b` (timestamps or ISO text), None when either is unknown."""
    ta, tb = _stamp(a), _stamp(b)
    return None if ta is None or tb is None else (tb - ta).total_seconds()


def _get(h: Any, name: str, default: Any = None) -> Any:
    value = getattr(h, name, default)
    if isinstance(value, float) and math.isnan(value):
        return default
    return value


def _listed(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list | tuple) else []


def _loop_key(h: Any) -> tuple[str, str, str] | None:
    """A handoff's progress key: (destination, task fingerprint, state version)."""
    fp = style.text(_get(h, "fingerprint"))
    if not fp:
        return None
    return (style.text(_get(h, "to_agent"), "?"), fp, style.text(_get(h, "state_version"), "?"))


def repeats_of(handoffs: pd.DataFrame, numbers: Sequence[int]) -> dict[int, int]:
    """Handoff number -> the earlier handoff (on this page) whose progress key it repeats."""
    first: dict[tuple[str, str, str], int] = {}
    out: dict[int, int] = {}
    for n, h in zip(numbers, handoffs.itertuples(), strict=True):
        key = _loop_key(h)
        if key is None:
            continue
        if key in first:
            out[n] = first[key]
        else:
            first[key] = n
    return out


def handoff_cause(h: Any, run: client.RunDetail, repeat_of: int | None = None) -> str:
    """What went wrong at one handoff, in its own facts (plain text, not Markdown).

    The collector's `why` already names the facts for most rules ("refunds is not a
    declared edge", "missing at destination: customer_tier"); for a loop it is the rule's
    three-clause definition, the same on every looping handoff, so the cause is rebuilt
    from the run: which earlier handoff this one repeats, or the cycle it closes."""
    verdict = style.text(_get(h, "verdict"))
    why = style.text(_get(h, "why"))
    if verdict != sc.LOOP:
        extra = []
        missing = _listed(_get(h, "missing_keys"))
        if missing and not all(k in why for k in missing):
            extra.append("missing keys: " + ", ".join(missing))
        reason = style.text(_get(h, "rejection_reason"))
        if reason and reason not in why:
            extra.append("refused as " + style.reason_label(reason).lower())
        cause = why or style.verdict_label(verdict)
        return cause + (f" ({'; '.join(extra)})" if extra else "")
    to = style.text(_get(h, "to_agent"), "?")
    if style.text(_get(h, "kind")) == sc.KIND_DELEGATION:
        return why or f"{to} was asked the same task again with no new work"
    state = style.text(_get(h, "state_version"), "?")
    if repeat_of is not None:
        return (
            f"repeats #{repeat_of}: the same task went to {to} again with no new work "
            f"(state v{state})"
        )
    if run.loop_cycle:
        return f"closes the cycle {style.path(run.loop_cycle)} with no new work (state v{state})"
    if run.summary.get("status") == sc.RUN_STATUS_MAX_TURNS:
        return f"the run stopped at its turn limit while cycling back to {to}"
    return f"the task came back to {to} with no new work (state v{state})"


def _ended(s: dict[str, Any], *, burned: bool = False) -> str:
    """How the run ended (or that it has not), in words; `burned`: a loop's turns are
    turns burned, said as such."""
    status = style.text(s.get("status"))
    turns = s.get("turns")
    after = ""
    if isinstance(turns, int):
        after = (
            f"; {style.count(turns, 'turn')} burned in all"
            if burned
            else f" after {style.count(turns, 'turn')}"
        )
    if s.get("ended_at") is None and status in ("", sc.RUN_STATUS_STARTED):
        return "it is **still running**"
    if status == sc.RUN_STATUS_MAX_TURNS:
        return f"it was **stopped at its turn limit**{after}"
    if status == sc.RUN_STATUS_COMPLETED:
        return f"it **ended completed**{after}"
    if status == sc.RUN_STATUS_FAILED:
        return f"it **ended failed**{after}"
    if status == sc.RUN_STATUS_INTERRUPTED:
        return f"it was **interrupted**{after}"
    return f"it ended ({style.md(status) or 'status unknown'})"


def _ending(s: dict[str, Any], *, burned: bool = False) -> str:
    """ "How it ended: …", or "Now: it is still running." for a run that has not."""
    words = _ended(s, burned=burned)
    return f"{'Now' if _running_run(s) else 'How it ended'}: {words}."


def _loop_story(run: client.RunDetail, first: Any) -> list[str]:
    """The cycle, its agents, when it started looping, the turns burned, how it ended."""
    s = run.summary
    cycle = run.loop_cycle
    agents = list(dict.fromkeys(cycle[:-1] if len(cycle) > 1 else cycle))
    reps = int(s.get("loop_repeats") or 0)
    total = run.handoffs_total or len(run.handoffs)
    lines = [
        "**Loop evidence:** "
        + (
            f"the cycle **{style.md(style.path(cycle))}** repeated "
            f"{style.count(reps, 'time')} with no new work"
            if cycle
            else f"{style.count(reps, 'handoff')} repeated an earlier one with no new work"
        )
        + (f"; agents in it: {', '.join(f'**{style.md(a)}**' for a in agents)}" if agents else "")
        + "."
    ]
    if first is not None:
        seq = int(_get(first, "seq") or 0)
        into = _since(s.get("started_at"), _get(first, "requested_at"))
        burned = max(total - seq + 1, 0) if seq else 0
        lines.append(
            f"It started looping at handoff **#{seq} "
            f"{style.md(style.edge(_get(first, 'from_agent'), _get(first, 'to_agent')))}** "
            f"({style.clock(_stamp(_get(first, 'requested_at')))}"
            + (f", {style.duration(into)} into the run" if into is not None else "")
            + f"); {style.count(burned, 'handoff')} of {total:,} were burned in the loop"
            + (f" (#{seq}–#{total})" if burned > 1 else "")
            + "."
        )
    lines.append(_ending(s, burned=True))
    return lines


def _failure_story(run: client.RunDetail, first: Any) -> list[str]:
    """One handoff's failure in its facts: who, when, what was missing or refused."""
    verdict = style.text(_get(first, "verdict"))
    frm = style.md(style.text(_get(first, "from_agent"), "?"))
    to = style.md(style.text(_get(first, "to_agent"), "?"))
    seq = _get(first, "seq")
    at = style.clock(_stamp(_get(first, "requested_at")))
    lead = f"Handoff **#{seq}** {frm} → {to}, requested {at}: "
    if verdict == sc.CONTEXT_INCOMPLETE:
        missing = _listed(_get(first, "missing_keys"))
        required = _listed(_get(first, "required_keys"))
        words = lead + (
            f"**{to}** was handed the work without "
            + ", ".join(f"**{style.md(k)}**" for k in missing)
            + (f" (required: {', '.join(style.md(k) for k in required)})" if required else "")
            + "."
        )
    elif verdict == sc.CONTRACT_REJECTED:
        reason = style.text(_get(first, "rejection_reason"))
        fields = _listed(_get(first, "rejection_fields"))
        words = lead + (
            f"**{to}** refused it as **{style.reason_label(reason).lower()}** "
            f"(reason {style.md(reason) or '—'}"
            + (f"; fields: {', '.join(style.md(f) for f in fields)}" if fields else "")
            + ")."
        )
    else:
        words = lead + style.md(handoff_cause(first, run)) + "."
    return [words]


def _run_story(run: client.RunDetail) -> list[str]:
    """A run-level failure without a deciding handoff (a crash, a completion unproven)."""
    s = run.summary
    verdict = style.text(s.get("verdict"))
    who = style.md(s.get("final_agent") or s.get("current_agent"))
    if verdict == sc.FALSE_COMPLETE:
        verifier = style.md(s.get("verifier"))
        proof = (
            f"its verifier {verifier} reported **{style.md(s.get('outcome_result'))}**"
            if verifier
            else "no verifier passed"
        )
        return [f"The run claimed completion{f' at **{who}**' if who else ''}, but {proof}."]
    return [f"{style.md(s.get('why'))}{f' (last with **{who}**)' if who else ''}."]


def story(run: client.RunDetail, first: Any) -> list[str]:
    """What happened, in Markdown lines, for an unhealthy run: the facts of its failure
    (the cycle and the turns it burned, the missing key, the refusal, the wait), how long
    it took and how it ended. The rule is not repeated here (`definition`)."""
    s = run.summary
    verdict = style.text(s.get("verdict"))
    if not style.is_unhealthy(verdict):
        return []
    if verdict == sc.LOOP:
        lines = _loop_story(run, first)
    elif first is not None:
        lines = _failure_story(run, first)
        lines.append(_ending(s))
    else:
        lines = _run_story(run)
        lines.append(_ending(s))
    if first is not None:
        timing = handoff_timing(run)
        admitted, held = timing.get(style.text(_get(first, "handoff_id")), (None, None))
        if admitted is not None or held is not None:
            lines.append(
                f"Handoff #{_get(first, 'seq')}: "
                + (
                    f"admitted {style.duration(admitted)} after its request"
                    if admitted is not None
                    else "never admitted"
                )
                + (
                    f"; its destination held the work for {style.duration(held)}"
                    if held is not None
                    else ""
                )
                + "."
            )
    return lines


def handoff_timing(run: client.RunDetail) -> dict[str, tuple[float | None, float | None]]:
    """Handoff id -> (seconds from request to admission, seconds the destination held the
    work), for the handoffs on this page.

    Admission is the `handoff.accept` span that says the destination started (only the
    spans on the timeline's page are read: a 10,000-handoff run shows the oldest). Held is
    the leg: from the request to the next handoff's request, or to the run's end."""
    admitted: dict[str, pd.Timestamp] = {}
    spans = run.spans
    if not spans.empty:
        for sp in spans.itertuples():
            attrs = sp.attributes if isinstance(sp.attributes, dict) else {}
            hid = style.text(sp.handoff_id)
            if sp.name == sc.SPAN_ACCEPT and attrs.get(sc.DESTINATION_STARTED) is True and hid:
                at = _stamp(sp.start)
                if at is not None and (hid not in admitted or at < admitted[hid]):
                    admitted[hid] = at
    out: dict[str, tuple[float | None, float | None]] = {}
    df = run.handoffs
    if df.empty:
        return out
    s = run.summary
    end = s.get("ended_at") or (None if _running_run(s) else s.get("last_seen_at"))
    asked = [_stamp(t) for t in df["requested_at"]]
    # The last handoff of the run holds the work until the run's end; the last of a page
    # that is not the run's last does not (its next handoff is on the next page).
    last_page = run.handoffs_offset + len(df) >= (run.handoffs_total or len(df))
    for i, h in enumerate(df.itertuples()):
        hid = style.text(h.handoff_id)
        start = asked[i]
        got = admitted.get(hid)
        wait = (got - start).total_seconds() if got is not None and start is not None else None
        nxt = asked[i + 1] if i + 1 < len(asked) else (_stamp(end) if last_page else None)
        held = None
        if got is not None and start is not None and nxt is not None and nxt >= start:
            held = (nxt - start).total_seconds()
        out[hid] = (wait, held)
    return out


def _running_run(s: dict[str, Any]) -> bool:
    return s.get("ended_at") is None and s.get("status") in (None, sc.RUN_STATUS_STARTED)
