"""Acknowledge: quiet an alert that someone is handling, and show everyone that it is.

A stuck run, a loop or an overdue wait stays on the board until it ends; the operator who
takes it says so here — who, until when, and a note code — and the collector stops
notifying about it and stops counting it in the `/metrics` alert gauges until then
(docs/api.md, Acknowledgements). The board still counts it: hiding it would make two
pages disagree about how many runs are stuck. Every page shows it instead:

- Run detail: a banner per active acknowledgement of the run or one of its waits
  ("Loop acknowledged by `alice` until 16:00:00 UTC — investigating") with a Clear button,
  and the Acknowledge form (by — remembered for the session —, for 15 min / 1 h / 4 h /
  24 h, note) for what is on fire in the run;
- Live: "N acknowledged" under the stuck, looping and overdue tiles (the collector's
  counts, `/live`: "0 still running · 1 acknowledged");
- Approvals, Loops, Runs and Live's run tables: an "Acknowledged" column (by · until), and
  on Approvals and Loops acknowledged rows after the unacknowledged ones of the same
  urgency;
- the sidebar of every page: "N acknowledged" (of the chosen service), opening the list.

The form appears only when the dashboard's API takes the write: a `handoffscope api`
process serving the store read-only answers 405 (asked once a minute with an empty POST,
which a collector refuses as invalid without writing), and the form and the Clear buttons
are replaced by one line saying where to acknowledge. `by` and agent names come from the wire and are shown
through `style.md` / `style.text` like every other such value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from handoffscope.dashboard import client, layout, style
from handoffscope.instrumentation import semconv as sc

NOTE_LABELS: dict[str, str] = {code: code.replace("_", " ") for code in sc.ACK_NOTES}
"""Words for the note codes (`semconv.ACK_NOTES`: "known_issue" is "known issue"), as they
end the banner's sentence; the codes were chosen to read as words, so a code added to the
contract gets its label here without a second list to keep in step."""

EVENT_WORDS: dict[str, str] = {
    sc.NOTIFY_RUN_LOOPING: "Loop",
    sc.NOTIFY_RUN_STUCK: "Stuck run",
    sc.NOTIFY_APPROVAL_OVERDUE: "Overdue wait",
}
"""What was acknowledged, as the subject of the banner's sentence."""

DURATIONS: dict[str, int] = {"15 min": 15 * 60, "1 h": 3600, "4 h": 4 * 3600, "24 h": 86400}
"""The form's choices, in seconds (`for_seconds`): an acknowledgement always ends, so a
forgotten one cannot hide a run for good; longer than a day is the CLI's `--until`."""
DEFAULT_DURATION = "1 h"

ICON = ":material/notifications_paused:"
RUN_PAGE = "views/run_detail.py"

_BY_KEY = "ack.by"
"""Session state: the last `by` this session acknowledged with, to fill the next form."""

READ_ONLY_LINE = (
    "To acknowledge, use a collector: this dashboard reads a query API that serves the "
    "store read-only. Post to a collector's `/api/v1/acknowledgements`, or run "
    "`handoffscope ack EVENT RUN_ID --by NAME --for 1h` against it."
)
UNSUPPORTED_LINE = (
    "This collector does not take acknowledgements (it is older than this dashboard)."
)


@dataclass(frozen=True)
class Target:
    """One thing that can be acknowledged: an event of a run (and of one of its waits)."""

    event: str
    run_id: str
    handoff_id: str | None = None
    label: str = ""
    """How the form names it, as Markdown ("the loop", "the wait on `ops` (handoff `h1`)")."""
    choice: str = ""
    """The same as plain text, for the form's "What" list (options are not Markdown)."""

    @property
    def key(self) -> tuple[str, str, str | None]:
        return (self.event, self.run_id, self.handoff_id)


# --- words ------------------------------------------------------------------------------


def is_active(ack: object) -> bool:
    """A row's `acknowledgement` is set (the API gives only the active one, or null)."""
    return isinstance(ack, Mapping) and ack.get("active", True) is not False


def until(ack: Mapping[str, Any]) -> str:
    """When it ends, in the pages' clock (`style.clock`)."""
    return style.clock(pd.to_datetime(ack.get("until"), utc=True, errors="coerce"))


def note_label(code: object) -> str:
    code = style.text(code)
    return NOTE_LABELS.get(code, code.replace("_", " "))


def subject(ack: Mapping[str, Any], markdown: bool = True) -> str:
    """What was acknowledged, as Markdown: "**Loop**", "**Overdue wait** (handoff `h1`)"
    (or as plain text)."""
    event = style.text(ack.get("event"))
    what = EVENT_WORDS.get(event, event.replace("_", " ").capitalize())
    hid = style.text(ack.get("handoff_id"))
    if not markdown:
        return what + (f" (handoff {hid})" if hid else "")
    return f"**{what}**" + (f" (handoff {style.md(hid)})" if hid else "")


def sentence(ack: Mapping[str, Any]) -> str:
    """The banner, as Markdown: "Loop acknowledged by `alice` until 16:00:00 UTC —
    investigating"."""
    return (
        f"{subject(ack)} acknowledged by {style.md(ack.get('by'))} until {until(ack)} — "
        f"{note_label(ack.get('note'))}"
    )


def cell(ack: object) -> str:
    """A table's "Acknowledged" cell: "alice · until 16:00:00 UTC", or "" (plain text:
    a table shows it as typed)."""
    if not isinstance(ack, Mapping) or not is_active(ack):
        return ""
    return f"{style.text(ack.get('by'), '?')} · until {until(ack)}"


def column(acks: Iterable[object]) -> list[str]:
    return [cell(a) for a in acks]


def tile_note(n: int, other: str = "") -> str:
    """Under a Live tile: "2 acknowledged", after the tile's `other` note ("3 still
    running · 2 acknowledged"); only `other` when none is."""
    return " · ".join(part for part in (other, f"{n:,} acknowledged" if n else "") if part)


def unacknowledged_first(df: pd.DataFrame, urgency: str | None = None) -> pd.DataFrame:
    """`df` with acknowledged rows after the unacknowledged ones of the same urgency (its
    verdict's rank, `semconv.RANK`, when `urgency` names the verdict column), keeping the
    collector's order otherwise: someone has the acknowledged ones in hand."""
    if df.empty or "acknowledgement" not in df.columns:
        return df
    rank = [sc.RANK.get(style.text(v), len(sc.RANK)) for v in df[urgency]] if urgency else 0
    keys = pd.DataFrame(
        {"urgency": rank, "acked": [is_active(a) for a in df["acknowledgement"]]},
        index=range(len(df)),
    )
    order = keys.sort_values(["urgency", "acked"], kind="stable").index
    return df.iloc[list(order)].reset_index(drop=True)


# --- the run's targets ------------------------------------------------------------------


def run_acknowledgements(detail: client.RunDetail) -> list[dict[str, Any]]:
    """Active acknowledgements of the run and of its waits, each once."""
    found: dict[tuple[Any, ...], dict[str, Any]] = {}
    listed = detail.summary.get("acknowledgements")
    waits = detail.waits
    per_wait = waits["acknowledgement"] if "acknowledgement" in waits.columns else []
    for ack in [*(listed if isinstance(listed, list) else []), *per_wait]:
        if is_active(ack):
            found.setdefault((ack.get("event"), ack.get("run_id"), ack.get("handoff_id")), ack)
    return list(found.values())


def run_targets(detail: client.RunDetail) -> list[Target]:
    """What is on fire in this run and can be acknowledged: its loop, its being stuck,
    each overdue or uncertain wait (one acknowledgement covers both for a wait)."""
    s = detail.summary
    run_id = style.text(s.get("run_id"))
    targets = []
    if s.get("loop"):
        targets.append(Target(sc.NOTIFY_RUN_LOOPING, run_id, None, "the loop", "the loop"))
    if _stuck(s):
        stuck = "the run being stuck"
        targets.append(Target(sc.NOTIFY_RUN_STUCK, run_id, None, stuck, stuck))
    for w in detail.waits.itertuples():
        hid = style.text(w.handoff_id)
        # A run-level wait has no handoff id, and the contract identifies a wait by one.
        if w.verdict in (sc.APPROVAL_OVERDUE, sc.WAIT_UNCERTAIN) and hid:
            owner = style.text(w.owner) or "nobody"
            label = f"the wait on {style.md(owner)} (handoff {style.md(hid)})"
            choice = style.without_controls(f"the wait on {owner} (handoff {hid})")
            targets.append(Target(sc.NOTIFY_APPROVAL_OVERDUE, run_id, hid, label, choice))
    return targets


def _stuck(summary: Mapping[str, Any]) -> bool:
    """Whether the run is stuck, by the collector's own rule (silent past the grace window,
    not waiting on a person): the run's detail does not say, its row in `/runs?state=stuck`
    does. Asked only while the run has not ended."""
    if summary.get("ended_at") is not None or summary.get("status") not in (
        None,
        sc.RUN_STATUS_STARTED,
    ):
        return False
    run_id = style.text(summary.get("run_id"))
    found = client.run_list(None, None, q=run_id, state="stuck", limit=20).rows
    return run_id in {style.text(r) for r in found["run_id"]}


# --- drawing ----------------------------------------------------------------------------


def run_panel(detail: client.RunDetail) -> None:
    """On Run detail, under the header: a banner per active acknowledgement (with its Clear
    button), then the Acknowledge form for what is on fire. Nothing when neither."""
    acks = run_acknowledgements(detail)
    targets = run_targets(detail)
    known = {t.key for t in targets}
    # An acknowledged target that no longer fires (the loop ended) can still be changed.
    for ack in acks:
        key = (style.text(ack.get("event")), style.text(ack.get("run_id")), ack.get("handoff_id"))
        if key not in known:
            choice = style.without_controls(subject(ack, markdown=False))
            targets.append(Target(*key, label=subject(ack), choice=choice))
    if not targets:
        return
    try:
        support: str | client.CollectorError = client.ack_support()
    except client.CollectorError as exc:
        support = exc  # said where the form would be; the banners still show
    for ack in acks:
        banner(ack, clearable=support == client.ACK_WRITABLE)
    with st.expander("Acknowledge", icon=ICON, expanded=False):
        if isinstance(support, client.CollectorError):
            layout.show_error(support)
        elif support == client.ACK_WRITABLE:
            form(targets, key=style.text(detail.summary.get("run_id")))
        else:
            st.caption(READ_ONLY_LINE if support == client.ACK_READ_ONLY else UNSUPPORTED_LINE)


def banner(ack: Mapping[str, Any], clearable: bool = True) -> None:
    """One acknowledgement in a sentence, and a button that clears it (when this API
    takes writes)."""
    text_col, button_col = st.columns([8, 1], vertical_alignment="center")
    text_col.info(sentence(ack), icon=ICON)
    key = "_".join(style.text(ack.get(k)) for k in ("event", "run_id", "handoff_id"))
    if not clearable or not button_col.button(
        "Clear", key=f"ack_clear_{key}", help="Alert about it again now."
    ):
        return
    try:
        client.clear_acknowledgement(
            style.text(ack.get("event")),
            style.text(ack.get("run_id")),
            style.text(ack.get("handoff_id")) or None,
        )
    except client.NothingToClear:
        pass  # gone already: the rerun shows the page without it
    except client.CollectorError as exc:
        layout.show_error(exc)
        return
    st.rerun()


def form(targets: Sequence[Target], key: str) -> None:
    """The Acknowledge form: what (when the run has several), by, for how long, note."""
    with st.form(f"ack_form_{key}", border=False):
        pick = 0
        if len(targets) > 1:
            pick = st.selectbox(
                "What", range(len(targets)), format_func=lambda i: targets[i].choice
            )
        else:
            st.markdown(f"Acknowledge {targets[0].label}.")
        who, how_long = st.columns(2)
        by = who.text_input(
            "By",
            value=st.session_state.get(_BY_KEY, ""),
            max_chars=64,
            placeholder="your handle or e-mail",
            help="Who is handling it: shown to everyone on every page.",
        )
        duration = how_long.radio(
            "For", list(DURATIONS), index=list(DURATIONS).index(DEFAULT_DURATION), horizontal=True
        )
        # Radios, not a drop-down: five short words, all in sight, one click each.
        note = st.radio(
            "Note", list(NOTE_LABELS), format_func=NOTE_LABELS.__getitem__, horizontal=True
        )
        submitted = st.form_submit_button("Acknowledge", icon=ICON)
    if not submitted:
        return
    target = targets[int(pick)]
    by = (by or "").strip()
    try:
        client.acknowledge(
            target.event,
            target.run_id,
            target.handoff_id,
            by=by,
            for_seconds=DURATIONS[str(duration)],
            note=str(note),
        )
    except client.ReadOnlyApi:
        st.caption(READ_ONLY_LINE)
        return
    except client.CollectorError as exc:
        layout.show_error(exc)
        return
    st.session_state[_BY_KEY] = by
    st.rerun()


def sidebar() -> None:
    """The sidebar of every page: "N acknowledged" (the chosen service's), opening the
    list with a link to each run; silent when the collector does not answer (the page
    says why) or has no acknowledgements."""
    try:
        acks = client.acknowledgements()
    except client.CollectorError:
        return
    service = layout.current_filters().service
    mine = [a for a in acks if service is None or a.get("service") == service]
    if not mine:
        return
    title = style.count(len(mine), "acknowledged", "acknowledged")
    with st.sidebar, st.expander(title, icon=ICON):
        for ack in mine:
            st.page_link(
                RUN_PAGE,
                label=f"Run {style.md(ack.get('run_id'))}",
                query_params={"run_id": style.text(ack.get("run_id"))},
            )
            st.caption(sentence(ack))
