"""How the dashboard looks: verdict colours and words, boundary names, numbers with units.

Operators read the board at a glance, so one verdict has one colour on every page and
in every chart, and a verdict is always shown in words (`semconv.VERDICT_LABELS`,
"Destination never started"), never as its wire name. Numbers carry their unit
("42 s", "3 handoffs", "12 %"). Pages and charts take all of that from here.

The palette is one colour per *meaning* (`COLOR_MEANINGS`). The six handoff-boundary
failures (rules 1–6 of docs/architecture.md, Verdicts) are one family of reds: three shades
(`BOUNDARY_REDS`, dark, brick and light), each drawn plain or cross-hatched in bars
(`VERDICT_PATTERNS`), so the six are six looks that still read "a boundary failed", and
which boundary is also said in words. No colour outside that family is a red. The colours
were chosen so that every pair stays apart (CIE76 ΔE ≥ `MIN_DELTA_E`) under normal vision
and under protanopia, deuteranopia and tritanopia (Machado et al. 2009, full severity), and
text on each badge (`text_on`) reaches WCAG AA contrast (≥ 4.5:1); tests/dashboard/
test_palette.py computes both, for the palette and for the series of every chart.

Agents are coloured by name, not by position (`agent_look`): a stable hash of the name
picks one of `AGENT_COLORS` × `AGENT_SYMBOLS`, colours that stay apart from every verdict's
in all four visions, so an agent keeps its look on every run and page. Two names can land
on one look; the chart labels every agent with its name, so they are never confused.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import pandas as pd

from handoffscope.instrumentation import semconv as sc

BOUNDARY_REDS = ("#3c0202", "#8f2a1e", "#ef6c6c")
"""The boundary-failure family, dark to light: the only reds on any page."""
COLOR_MEANINGS: dict[str, str] = {
    "a handoff failed at a boundary (dark)": BOUNDARY_REDS[0],
    "a handoff failed at a boundary (brick)": BOUNDARY_REDS[1],
    "a handoff failed at a boundary (light)": BOUNDARY_REDS[2],
    # Loop is a dark amber, not the rust it was: a red-orange read as one more boundary red.
    "loop": "#b85c00",
    "false completion": "#e879f9",
    "approval overdue": "#fb923c",
    "wait uncertain": "#facc15",
    "run failed": "#0f172a",
    "waiting on a person": "#115e59",
    "in flight": "#2563eb",
    "unverified": "#cbd5e1",
    "healthy": "#86efac",
}
MIN_DELTA_E = 20.0
"""The smallest CIE76 distance between two meanings' colours, in any of the four visions."""
MIN_CONTRAST = 4.5
"""WCAG 2.x AA for normal text."""

_DARK, _BRICK, _LIGHT = BOUNDARY_REDS
# The brick, the reddest-looking shade, goes to the two rejections, the commonest pair.
VERDICT_COLORS: dict[str, str] = {
    sc.ROUTE_REJECTED: _BRICK,
    sc.STALE_CONTROL: _DARK,
    sc.OPEN_TOOL_PROTOCOL: _LIGHT,
    sc.CONTEXT_INCOMPLETE: _DARK,
    sc.CONTRACT_REJECTED: _BRICK,
    sc.DESTINATION_NOT_STARTED: _LIGHT,
    sc.LOOP: COLOR_MEANINGS["loop"],
    sc.FALSE_COMPLETE: COLOR_MEANINGS["false completion"],
    sc.APPROVAL_OVERDUE: COLOR_MEANINGS["approval overdue"],
    sc.WAIT_UNCERTAIN: COLOR_MEANINGS["wait uncertain"],
    sc.RUN_FAILED: COLOR_MEANINGS["run failed"],
    sc.WAITING_ON_APPROVAL: COLOR_MEANINGS["waiting on a person"],
    sc.IN_FLIGHT: COLOR_MEANINGS["in flight"],
    sc.UNVERIFIED: COLOR_MEANINGS["unverified"],
    sc.HEALTHY: COLOR_MEANINGS["healthy"],
}
HATCH = "x"
"""The second look of a boundary red in a bar: cross-hatched (the partial week is "/")."""
VERDICT_PATTERNS: dict[str, str] = {
    sc.CONTEXT_INCOMPLETE: HATCH,
    sc.CONTRACT_REJECTED: HATCH,
    sc.DESTINATION_NOT_STARTED: HATCH,
}
"""Bar pattern per verdict ("" = plain): three shades × plain/hatched = six boundary looks.
A marker cannot carry a pattern; there the shade and the words tell them apart."""
NEUTRAL = "#8c92a0"
"""No verdict: every handoff counted together, a week compared against, the run itself.
A grey ΔE ≥ MIN_DELTA_E from every meaning in every vision (slate #64748b came within 17
of the waiting teal under protanopia)."""
UNKNOWN_COLOR = NEUTRAL
"""For a verdict this dashboard does not know (a newer collector): grey, never a crash."""

HEALTHY_GREEN = VERDICT_COLORS[sc.HEALTHY]
FAILURE_RED = _BRICK
"""A boundary failure with no particular verdict (a failed boundary cell, a rejection rate)."""

AGENT_COLORS = ("#2e378a", "#1f0449", "#0b20da", "#230891", "#207ab6", "#363a63")
"""Agent colours: each ΔE ≥ MIN_DELTA_E from every verdict colour, from NEUTRAL and from
each other, in all four visions — blues and violets, as the warm and green hues mean a
verdict. Only six fit; the marker symbol multiplies the looks (`AGENT_SYMBOLS`)."""
AGENT_SYMBOLS = ("circle", "square", "diamond", "hexagon")


def agent_look(name: object) -> tuple[str, str]:
    """(colour, marker symbol) for an agent, from its name alone: the same agent looks the
    same on every run and page. BLAKE2b, not `hash()`, which Python salts per process."""
    digest = hashlib.blake2b(text(name).encode("utf-8"), digest_size=8).digest()
    n = int.from_bytes(digest, "big")
    return AGENT_COLORS[n % len(AGENT_COLORS)], AGENT_SYMBOLS[
        n // len(AGENT_COLORS) % len(AGENT_SYMBOLS)
    ]


UNKNOWN_COLOR = "#6b7280"
"""For a verdict this dashboard does not know (a newer collector): grey, never a crash."""

BOUNDARY_LABELS: dict[str, str] = {
    sc.BOUNDARY_ROUTE: "Route",
    sc.BOUNDARY_CONTROL: "Control",
    sc.BOUNDARY_TOOL_PROTOCOL: "Tool protocol",
    sc.BOUNDARY_CONTEXT: "Context",
    sc.BOUNDARY_DESTINATION: "Destination",
    sc.BOUNDARY_RESULT: "Result",
    sc.BOUNDARY_PROGRESS: "Progress (loop)",
    sc.BOUNDARY_WAIT: "Wait checkpoint",
    sc.BOUNDARY_RUN: "Run (crash or limit)",
}

BOUNDARY_STATE_PASSED = sc.PASSED
BOUNDARY_STATE_FAILED = sc.FAILED
BOUNDARY_STATE_UNKNOWN = sc.UNKNOWN
BOUNDARY_STATE_NOT_OBSERVED = sc.NOT_OBSERVED
BOUNDARY_STATE_WORDS = {
    BOUNDARY_STATE_PASSED: "✓ passed",
    BOUNDARY_STATE_FAILED: "✗ failed",
    BOUNDARY_STATE_UNKNOWN: "· no evidence",
    BOUNDARY_STATE_NOT_OBSERVED: "○ not observed",
}

REJECTION_REASON_LABELS: dict[str, str] = {
    "route": "Undeclared route",
    sc.REJECTION_INVALID: "Invalid contract",
    sc.REJECTION_STALE: "Stale contract",
    sc.REJECTION_UNAUTHORIZED: "Unauthorized",
    sc.REJECTION_NO_BUDGET: "No budget left",
    sc.REJECTION_VAGUE_GOAL: "Vague goal",
}
"""Weekly-review reasons: `route` (an undeclared route) plus the receiver's refusal codes."""

REASON_COLORS: dict[str, str] = {
    # A rejection is a boundary failure: each reason one of the six looks of that family
    # (shade here, pattern in REASON_PATTERNS), never a hue that means something else.
    "route": VERDICT_COLORS[sc.ROUTE_REJECTED],
    sc.REJECTION_INVALID: _DARK,
    sc.REJECTION_STALE: _LIGHT,
    sc.REJECTION_UNAUTHORIZED: _DARK,
    sc.REJECTION_NO_BUDGET: _BRICK,
    sc.REJECTION_VAGUE_GOAL: _LIGHT,
}
"""One look per rejection reason, so a reason keeps its colour from week to week."""
REASON_PATTERNS: dict[str, str] = {
    sc.REJECTION_UNAUTHORIZED: HATCH,
    sc.REJECTION_NO_BUDGET: HATCH,
    sc.REJECTION_VAGUE_GOAL: HATCH,
}


def bar_pattern(shape: str | Sequence[str], color: str | Sequence[str]) -> dict:
    """A plotly `marker.pattern` drawing `shape` over the bar's own colour, in the colour
    its text would take (`text_on`), so the hatch shows on a dark red and a light one."""
    if isinstance(color, str):
        fg: str | list[str] = text_on(color)
    else:
        fg = [text_on(c) for c in color]
    shapes = shape if isinstance(shape, str) else list(shape)
    return {"shape": shapes, "fillmode": "overlay", "fgcolor": fg, "size": 7, "solidity": 0.35}


RUN_STATUS_LABELS: dict[str, str] = {
    sc.RUN_STATUS_STARTED: "Running",
    sc.RUN_STATUS_COMPLETED: "Completed",
    sc.RUN_STATUS_FAILED: "Failed",
    sc.RUN_STATUS_INTERRUPTED: "Interrupted",
    sc.RUN_STATUS_MAX_TURNS: "Hit max turns",
}

CONTINUITY_LABELS: dict[str, str] = {
    sc.CONTINUITY_FIRST: "First turn",
    sc.CONTINUITY_CONTINUED: "Continued",
    sc.CONTINUITY_REROUTED: "Re-routed",
    sc.CONTINUITY_DIVERTED: "Diverted",
}
"""A run's continuity in its conversation (docs/semconv.md, Turns)."""


def continuity_label(code: object) -> str:
    return _words(code, CONTINUITY_LABELS) if text(code) else "—"


SPAN_LABELS: dict[str, str] = {
    sc.SPAN_RUN: "Run",
    sc.SPAN_REQUEST: "Request",
    sc.SPAN_TRANSFER: "Transfer",
    sc.SPAN_ACCEPT: "Accept",
    sc.SPAN_WAIT: "Wait",
    sc.SPAN_OUTCOME: "Outcome",
}
SPAN_SYMBOLS: dict[str, str] = {
    sc.SPAN_RUN: "diamond",
    sc.SPAN_REQUEST: "circle",
    sc.SPAN_TRANSFER: "triangle-right",
    sc.SPAN_ACCEPT: "square",
    sc.SPAN_WAIT: "hourglass",
    sc.SPAN_OUTCOME: "star",
}


def text(value: object, default: str = "") -> str:
    """A cell as text, `default` when missing (None, NaN, NaT — pandas 3 stores missing
    strings as NaN, which is truthy, so `value or ""` is not enough)."""
    if value is None or isinstance(value, list | tuple | dict):
        return default if value is None else str(value)
    try:
        if pd.isna(value):
            return default
    except (TypeError, ValueError):
        pass
    return str(value)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_BACKTICKS = re.compile(r"`+")


def without_controls(value: str) -> str:
    """`value` with each control character shown as U+FFFD."""
    return _CONTROL.sub("\ufffd", value)


_ICON_PREFIX = ":material/"
_ICON_PREFIX_KEPT = ":\u2060material/"


def md(value: object) -> str:
    """Text from the wire (run ids, agent names, services, sentences that quote them) as
    inert Markdown: the one way every page puts such a value into `st.markdown`,
    `st.caption`, alerts and labels. It is shown as typed, never as a link, image, autolink,
    icon, colour, emoji, formula, emphasis, heading or HTML.

    How: an inline code span. Backslash-escaping the Markdown characters (the previous
    way) is not enough in Streamlit: GFM autolinks (`www.x.com`, `http://…`, `a@b.c`) and
    emoji shortcodes are found in the text *after* escapes are resolved, so no escape can
    stop them; Streamlit's `:material/…:`, `:red[…]` and `$…$` are parsed in ways that
    escapes only partly defeat. Inside a code span none of them is looked for. The fence is
    one backtick longer than any run of backticks in the value, so a value cannot close
    it; control characters (which no valid value holds, semconv.CONTROL_CHARS) are shown
    as U+FFFD so a newline cannot end the paragraph around it.

    One change is invisible: Streamlit rewrites every `:material/` of the raw source to
    `:material_` before parsing, code spans included, so the value would be shown altered;
    a WORD JOINER (U+2060) after that colon keeps it as typed on screen."""
    shown = without_controls(text(value)).replace(_ICON_PREFIX, _ICON_PREFIX_KEPT)
    if not shown:
        return ""
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(shown)), default=0) + 1)
    # CommonMark strips one space from each end of a code span that has both.
    pad = " " if shown[0] in "` " or shown[-1] in "` " else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def verdict_label(verdict: object) -> str:
    """Words for a verdict; an unknown one is shown as itself rather than hidden."""
    verdict = text(verdict)
    if not verdict:
        return "—"
    return sc.VERDICT_LABELS.get(verdict, verdict.replace("_", " ").capitalize())


def verdict_color(verdict: object) -> str:
    return VERDICT_COLORS.get(text(verdict), UNKNOWN_COLOR)


def label_color(label: str) -> str:
    """Colour for a verdict already turned into words (tables hold the words)."""
    return _LABEL_COLORS.get(label, UNKNOWN_COLOR)


_LABEL_COLORS = {sc.VERDICT_LABELS[v]: c for v, c in VERDICT_COLORS.items()}


def is_unhealthy(verdict: object) -> bool:
    return text(verdict) in sc.FAILURE_VERDICTS


def next_step(verdict: object) -> str:
    return sc.NEXT_STEPS.get(text(verdict), "")


def boundary_label(boundary: object) -> str:
    return _words(boundary, BOUNDARY_LABELS)


def reason_label(reason: object) -> str:
    return _words(reason, REJECTION_REASON_LABELS)


def status_label(status: object) -> str:
    return _words(status, RUN_STATUS_LABELS)


def _words(code: object, labels: dict[str, str]) -> str:
    code = text(code)
    if not code:
        return "—"
    return labels.get(code, code.replace("_", " ").capitalize())


DARK_TEXT = "#111827"
LIGHT_TEXT = "#ffffff"


def _linear(channel: int) -> float:
    c = channel / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def luminance(color: str) -> float:
    """WCAG relative luminance of "#rrggbb"."""
    r, g, b = (_linear(int(color[i : i + 2], 16)) for i in (1, 3, 5))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two "#rrggbb" colours (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def text_on(color: str) -> str:
    """Dark or white text, whichever contrasts more with `color` ("#rrggbb")."""
    return DARK_TEXT if contrast(color, DARK_TEXT) >= contrast(color, LIGHT_TEXT) else LIGHT_TEXT


def verdict_cell_css(label: object) -> str:
    """Styler rule for a verdict cell: the verdict's colour as a badge."""
    if not isinstance(label, str) or label not in _LABEL_COLORS:
        return ""
    color = _LABEL_COLORS[label]
    return f"background-color: {color}; color: {text_on(color)}; font-weight: 600"


def boundary_cell_css(words: object) -> str:
    if words == BOUNDARY_STATE_WORDS[BOUNDARY_STATE_FAILED]:
        return f"background-color: {FAILURE_RED}; color: {text_on(FAILURE_RED)}; font-weight: 700"
    if words == BOUNDARY_STATE_WORDS[BOUNDARY_STATE_PASSED]:
        return "background-color: #dcfce7; color: #14532d"
    return "color: #6b7280"


def share_color(share: float, alpha: float = 0.55) -> str:
    """Green (0 % unhealthy) through amber to red (100 %), for links and bars."""
    share = 0.0 if share is None or math.isnan(share) else min(max(share, 0.0), 1.0)
    if share <= 0.5:
        lo, hi, t = (22, 163, 74), (217, 119, 6), share / 0.5
    else:
        lo, hi, t = (217, 119, 6), (185, 28, 28), (share - 0.5) / 0.5
    r, g, b = (round(a + (z - a) * t) for a, z in zip(lo, hi, strict=True))
    return f"rgba({r},{g},{b},{alpha})"


# --- numbers with units ----------------------------------------------------------------


def duration(seconds: float | None) -> str:
    """A duration a person reads: "120 ms", "42 s", "3 min 5 s", "2 h 10 min", "3 d 4 h".

    Under a second in milliseconds: a scripted or fast run lasts a few of them, and "0 s"
    on every such run read as "the duration is broken"."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "—"
    s = abs(float(seconds))
    if s < 0.001:
        return "< 1 ms" if s > 0 else "0 s"
    if round(s * 1000) < 1000:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.0f} s"
    m, sec = divmod(int(round(s)), 60)
    if m < 60:
        return f"{m} min {sec} s" if sec and m < 10 else f"{m} min"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h} h {m} min" if m else f"{h} h"
    d, h = divmod(h, 24)
    return f"{d} d {h} h" if h else f"{d} d"


def time_left(seconds: float | None) -> str:
    """Time to a deadline: "in 12 min", "overdue by 5 min", "no deadline"."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "no deadline"
    if seconds < 0:
        return f"overdue by {duration(-seconds)}"
    return f"in {duration(seconds)}"


def ago(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "—"
    return f"{duration(seconds)} ago"


def percent(share: float | None) -> str:
    if share is None or (isinstance(share, float) and math.isnan(share)):
        return "—"
    return f"{share * 100:.0f} %" if share == 0 or share >= 0.01 else f"{share * 100:.1f} %"


def count(n: object, unit: str, plural: str | None = None) -> str:
    """ "1 handoff", "3 handoffs"; a missing number counts as 0."""
    n = int(float(text(n, "0")))
    word = unit if n == 1 else (plural or unit + "s")
    return f"{n:,} {word}"


def clock(ts: datetime | pd.Timestamp | None) -> str:
    """A UTC wall-clock time, "12:03:04 UTC"; with the date when it is not today."""
    if ts is None or pd.isna(ts):
        return "—"
    stamp = pd.Timestamp(ts)
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    if stamp.date() == datetime.now(UTC).date():
        return stamp.strftime("%H:%M:%S UTC")
    return stamp.strftime("%Y-%m-%d %H:%M UTC")


def path(agents: Iterable[object]) -> str:
    """An agent path in words: "triage → billing → triage"."""
    return " → ".join(text(a, "?") for a in agents)


def edge(from_agent: object, to_agent: object) -> str:
    return f"{text(from_agent, '?')} → {text(to_agent, '?')}"
