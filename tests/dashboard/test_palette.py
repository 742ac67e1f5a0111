"""The palette, computed: WCAG AA contrast for the text on every verdict badge, every
pair of colour meanings distinguishable under normal vision and the three common
colour-vision deficiencies, and the same for the series each chart actually draws.

Simulation: Machado, Oliveira & Fernandes (2009), "A Physiologically-based Model for
Simulation of Color Vision Deficiency", full-severity matrices, applied to linear sRGB;
distance: CIE76 ΔE in CIELAB (D65). The six boundary failures are three reds, each plain
or cross-hatched in bars: two series are told apart by colour (ΔE ≥ MIN_DELTA_E in every
vision) or by what is not colour (bar pattern, marker symbol, line dash).

Each chart builder in charts.py is built from a frame holding every series it can draw,
and the colours are read back from the figure, so a chart that picks a colour of its own
is caught, not only the palette it was meant to use.
"""

from __future__ import annotations

import colorsys
import itertools
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pandas as pd
import plotly.graph_objects as go
import pytest

from handoffscope.dashboard import charts, style
from handoffscope.instrumentation import semconv as sc

MACHADO = {
    "protanopia": (
        (0.152286, 1.052583, -0.204868),
        (0.114503, 0.786281, 0.099216),
        (-0.003882, -0.048116, 1.051998),
    ),
    "deuteranopia": (
        (0.367322, 0.860646, -0.227968),
        (0.280085, 0.672501, 0.047413),
        (-0.011820, 0.042940, 0.968881),
    ),
    "tritanopia": (
        (1.255528, -0.076749, -0.178779),
        (-0.078411, 0.930809, 0.147602),
        (0.004733, -0.691367, 1.687635),
    ),
}
VISIONS = (None, *MACHADO)


def _linear_rgb(color: str) -> tuple[float, ...]:
    return tuple(style._linear(int(color[i : i + 2], 16)) for i in (1, 3, 5))


def _lab(rgb: tuple[float, ...]) -> tuple[float, float, float]:
    r, g, b = rgb
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return (116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z)))


def seen(color: str, vision: str | None) -> tuple[float, float, float]:
    rgb = _linear_rgb(color)
    if vision is not None:
        m = MACHADO[vision]
        rgb = tuple(min(1.0, max(0.0, sum(m[i][j] * rgb[j] for j in range(3)))) for i in range(3))
    return _lab(rgb)


def test_the_simulation_is_the_published_one() -> None:
    # Known behaviour, so the check below can fail: pure red and green, far apart in
    # normal vision, nearly merge under deuteranopia; white stays white.
    red, green = "#ff0000", "#00ff00"
    normal = math.dist(seen(red, None), seen(green, None))
    deutan = math.dist(seen(red, "deuteranopia"), seen(green, "deuteranopia"))
    assert normal > 80 and deutan < normal / 2
    assert math.dist(seen("#ffffff", "tritanopia"), seen("#ffffff", None)) < 1.0
    assert round(style.contrast("#ffffff", "#000000"), 1) == 21.0
    assert round(style.contrast("#777777", "#ffffff"), 2) == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize("verdict", sc.PRECEDENCE)
def test_every_verdict_badge_has_aa_contrast(verdict: str) -> None:
    color = style.verdict_color(verdict)
    assert color in style.COLOR_MEANINGS.values(), f"{verdict}: a colour without a meaning"
    ratio = style.contrast(color, style.text_on(color))
    assert ratio >= style.MIN_CONTRAST, f"{verdict} on {color}: {ratio:.2f}:1"


def _closest(colors: dict[str, str]) -> tuple[float, str, str, str]:
    worst = []
    for (m1, c1), (m2, c2) in itertools.combinations(colors.items(), 2):
        for vision in VISIONS:
            d = math.dist(seen(c1, vision), seen(c2, vision))
            worst.append((d, m1, m2, vision or "normal"))
    return min(worst)


def test_every_meaning_is_distinguishable_in_every_vision() -> None:
    d, m1, m2, vision = _closest(style.COLOR_MEANINGS | {"no verdict": style.NEUTRAL})
    assert d >= style.MIN_DELTA_E, f"{m1} vs {m2} under {vision}: ΔE {d:.1f}"


def _red_family(color: str) -> bool:
    """A colour a person calls red: hue within 15° of red, saturated, neither near-white
    nor near-black. (Loop's old rust, hue 17°, was one by eye; its amber is 30°.)"""
    r, g, b = (int(color[i : i + 2], 16) / 255 for i in (1, 3, 5))
    h, lightness, s = colorsys.rgb_to_hls(r, g, b)
    return min(h * 360, 360 - h * 360) <= 15 and s >= 0.25 and 0.08 < lightness < 0.92


def test_one_colour_one_meaning() -> None:
    assert len(set(style.COLOR_MEANINGS.values())) == len(style.COLOR_MEANINGS)
    boundary = set(sc.PRECEDENCE[:6])
    # The six boundary failures are the three reds, each shade plain and hatched once:
    # six looks, and no other verdict has one of those reds.
    looks = {(style.verdict_color(v), style.VERDICT_PATTERNS.get(v, "")) for v in boundary}
    assert len(looks) == 6
    assert {c for c, _ in looks} == set(style.BOUNDARY_REDS)
    for verdict in sc.PRECEDENCE[6:]:
        assert style.verdict_color(verdict) not in style.BOUNDARY_REDS, verdict
        assert verdict not in style.VERDICT_PATTERNS, verdict
    # Only the boundary family is red: no other meaning, neutral, agent colour.
    assert all(_red_family(c) for c in style.BOUNDARY_REDS)
    others = [
        *(c for c in style.COLOR_MEANINGS.values() if c not in style.BOUNDARY_REDS),
        *style.AGENT_COLORS, style.NEUTRAL, style.UNKNOWN_COLOR,
    ]  # fmt: skip
    assert not [c for c in others if _red_family(c)]
    # Rejection reasons are boundary failures: the six looks of the family, each once.
    reasons = {(c, style.REASON_PATTERNS.get(r, "")) for r, c in style.REASON_COLORS.items()}
    assert len(reasons) == len(style.REASON_COLORS) and reasons == looks


def test_agent_colours_never_read_as_a_verdict() -> None:
    # Pairwise apart, and apart from every verdict colour and the neutral grey (an arrow
    # with no verdict), in every vision: an agent's dot is never mistaken for a verdict.
    assert len(set(style.AGENT_COLORS)) == len(style.AGENT_COLORS)
    d, a, b, vision = _closest({c: c for c in style.AGENT_COLORS})
    assert d >= style.MIN_DELTA_E, f"agents {a} vs {b} under {vision}: ΔE {d:.1f}"
    for agent in style.AGENT_COLORS:
        for meaning, color in [*style.COLOR_MEANINGS.items(), ("no verdict", style.NEUTRAL)]:
            d, *_, vision = _closest({agent: agent, meaning: color})
            assert d >= style.MIN_DELTA_E, f"agent {agent} vs {meaning} under {vision}"


def test_an_agent_is_coloured_by_its_name_alone() -> None:
    names = [f"agent-{i}" for i in range(200)]
    looks = [style.agent_look(n) for n in names]
    # Stable across processes: BLAKE2b of the name, not Python's salted hash().
    assert style.agent_look("triage") == style.agent_look("triage")
    assert looks == [style.agent_look(n) for n in reversed(names)][::-1]
    # Spread over the palette, not stuck on a few looks.
    assert len(set(looks)) == len(style.AGENT_COLORS) * len(style.AGENT_SYMBOLS)
    # In a chart, an agent looks the same whatever its place in the path, in any run.
    one = charts.agent_path(["triage", "billing", "refunds", "billing"])
    two = charts.agent_path(["refunds", "escalation", "billing", "triage"])

    def by_name(fig: go.Figure) -> dict[str, tuple[str, str]]:
        m = fig.data[0].marker
        return {t: (c, sym) for t, c, sym in zip(fig.data[0].text, m.color, m.symbol, strict=True)}

    a, b = by_name(one), by_name(two)
    for name in ("triage", "billing", "refunds"):
        assert a[name] == b[name] == style.agent_look(name)


# --- the series each chart draws ----------------------------------------------------------

_RGBA = re.compile(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)")


def _hex(color: str, opacity: float = 1.0) -> str:
    """A plotly colour as "#rrggbb", as seen over the white page (alpha blended)."""
    if color.startswith("#"):
        rgb, alpha = [int(color[i : i + 2], 16) for i in (1, 3, 5)], 1.0
    else:
        m = _RGBA.fullmatch(color.replace(" ", ""))
        assert m, f"a colour this test cannot read: {color}"
        rgb, alpha = [float(x) for x in m.groups()[:3]], float(m.group(4) or 1)
    a = alpha * opacity
    return "#" + "".join(f"{round(c * a + 255 * (1 - a)):02x}" for c in rgb)


def _each(value: object, n: int) -> list:
    if isinstance(value, list | tuple):
        return list(value)
    return [value] * n


Look = tuple[str, str]  # (colour seen, what is not colour: pattern / symbol / dash)


def series_looks(fig: go.Figure, *, legend_only: bool = False) -> dict[Look, set[str]]:
    """Every look a figure draws -> the series that draw it. A series is a trace, or one
    colour of a trace that colours its points (one bar a verdict, one dot an agent).
    `legend_only`: only the traces in the legend (a chart whose other colours are a
    continuous scale of a number written beside each mark)."""
    looks: dict[Look, set[str]] = {}
    for i, t in enumerate(fig.data):
        if legend_only and t.showlegend is False:
            continue
        name = t.name or f"trace {i}"
        if isinstance(t, go.Bar):
            n = len(t.y if t.orientation != "h" else t.x)
            pattern = t.marker.pattern.shape if t.marker.pattern else None
            opacity = t.marker.opacity if t.marker.opacity is not None else 1.0
            for color, shape in zip(_each(t.marker.color, n), _each(pattern or "", n), strict=True):
                look = (_hex(color, opacity), "bar " + (shape or "plain"))
                looks.setdefault(look, set()).add(name)
        elif isinstance(t, go.Scatter):
            n = len(t.x) if t.x is not None else 0
            if "markers" in (t.mode or "") and t.marker.opacity != 0:
                symbols = _each(t.marker.symbol or "circle", n)
                for color, symbol in zip(_each(t.marker.color, n), symbols, strict=True):
                    look = (_hex(color), f"marker {symbol}")
                    looks.setdefault(look, set()).add(name)
            if "lines" in (t.mode or ""):
                look = (_hex(t.line.color), f"line {t.line.dash or 'solid'}")
                looks.setdefault(look, set()).add(name)
        else:
            assert isinstance(t, go.Heatmap), f"a trace type this test does not read: {t.type}"
    return looks


NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
AGENTS = ("triage", "billing", "refunds", "escalation", "fraud-check")


def _timeline() -> pd.DataFrame:
    rows = []
    for m in range(10):
        minute = NOW + timedelta(minutes=m)
        for i, verdict in enumerate(sc.PRECEDENCE):
            if verdict != sc.UNVERIFIED:  # a run-only verdict: no handoff has it
                rows.append(
                    (minute, verdict, 1 + (i + m) % 4 + (40 if verdict == sc.HEALTHY else 0))
                )
    return pd.DataFrame(rows, columns=["minute", "verdict", "count"])


def _edges() -> pd.DataFrame:
    pairs = [
        ("triage", "billing"),
        ("billing", "refunds"),
        ("refunds", "triage"),
        ("triage", "escalation"),
        ("escalation", "escalation"),
        ("billing", "fraud-check"),
    ]
    return pd.DataFrame(
        [(f, t, sc.KIND_DELEGATION if t == "fraud-check" else sc.KIND_HANDOFF, 10 * (i + 1), i,
          i / (10 * (i + 1)), i % 2) for i, (f, t) in enumerate(pairs)],
        columns=["from_agent", "to_agent", "kind", "count", "unhealthy", "unhealthy_share",
                 "undeclared"],
    )  # fmt: skip


def _run() -> tuple[pd.DataFrame, pd.DataFrame]:
    verdicts = [v for v in sc.PRECEDENCE if v != sc.UNVERIFIED]
    handoffs = pd.DataFrame(
        [(f"h{i}", AGENTS[i % 5], AGENTS[(i + 1) % 5], v) for i, v in enumerate(verdicts)],
        columns=["handoff_id", "from_agent", "to_agent", "verdict"],
    )
    spans = [(None, sc.SPAN_RUN, NOW, NOW + timedelta(seconds=60), {})]
    for i in range(len(verdicts)):
        at = NOW + timedelta(seconds=2 * i)
        spans += [(f"h{i}", name, at, at + timedelta(milliseconds=300), {sc.VERDICT: "x"})
                  for name in (sc.SPAN_REQUEST, sc.SPAN_TRANSFER, sc.SPAN_ACCEPT, sc.SPAN_WAIT,
                               sc.SPAN_OUTCOME)]  # fmt: skip
    spans.append(("not-listed", sc.SPAN_REQUEST, NOW, NOW, {}))
    return pd.DataFrame(
        spans, columns=["handoff_id", "name", "start", "end", "attributes"]
    ), handoffs


def _approvals() -> pd.DataFrame:
    lefts = [-7200.0, -600.0, 300.0, 1800.0, 7200.0, float("nan"), 600.0]
    rows = []
    for i, owner in enumerate(("ops-oncall", "finance-lead", "legal", None)):
        for j, left in enumerate(lefts):
            verdict = (
                sc.WAIT_UNCERTAIN
                if j == 6
                else (sc.APPROVAL_OVERDUE if left < 0 else sc.WAITING_ON_APPROVAL)
            )
            rows.append((owner, left + i, verdict))
    return pd.DataFrame(rows, columns=["owner", "seconds_left", "verdict"])


WEEKS = ["2026-W45", "2026-W46", "2026-W47", "2026-W48", "2026-W49"]


def _weeks() -> pd.DataFrame:
    return pd.DataFrame(
        [(w, 0.02 * (i + 1), 2 * (i + 1), 100) for i, w in enumerate(WEEKS)],
        columns=["week", "rate", "rejections", "handoffs"],
    )


def _by_reason() -> pd.DataFrame:
    return pd.DataFrame(
        [(w, r, 0.005 * (i + j + 1), i + j + 1) for i, w in enumerate(WEEKS)
         for j, r in enumerate(style.REASON_COLORS)],
        columns=["week", "reason", "rate", "count"],
    )  # fmt: skip


def _by_edge() -> pd.DataFrame:
    return pd.DataFrame(
        [(w, style.edge(f, t), f, t, 0.01 * (i + j + 1), i + j, 100) for i, w in enumerate(WEEKS)
         for j, (f, t) in enumerate(zip(AGENTS, AGENTS[1:], strict=False))],
        columns=["week", "edge", "from_agent", "to_agent", "rate", "rejections", "handoffs"],
    )  # fmt: skip


def _cells() -> pd.DataFrame:
    e = _by_edge()
    return pd.DataFrame(
        [(r.week, r.from_agent, r.to_agent, reason, 1 + k)
         for r in e.itertuples() for k, reason in enumerate(style.REASON_COLORS)],
        columns=["week", "from_agent", "to_agent", "reason", "count"],
    )  # fmt: skip


BUILDERS: dict[str, Callable[[], go.Figure]] = {
    "verdict_counts": lambda: charts.verdict_counts(
        {v: i + 1 for i, v in enumerate(sc.PRECEDENCE)}
    ),
    "unhealthy_timeline": lambda: charts.unhealthy_timeline(_timeline()),
    "handoffs_per_minute": lambda: charts.handoffs_per_minute(_timeline()),
    "control_flow": lambda: charts.control_flow(_edges()),
    "agent_path": lambda: charts.agent_path(
        [*AGENTS, "triage"], step_verdicts=[sc.ROUTE_REJECTED, sc.LOOP, None, sc.HEALTHY]
    ),
    "run_timeline": lambda: charts.run_timeline(*_run()),
    "deadline_buckets": lambda: charts.deadline_buckets(_approvals()),
    "counts_by": lambda: charts.counts_by(
        pd.DataFrame({"final_agent": [*AGENTS, "triage"]}),
        "final_agent",
        unit="run",
        color=style.verdict_color(sc.FALSE_COMPLETE),
    ),  # fmt: skip
    "weekly_rate": lambda: charts.weekly_rate(
        _weeks(), this_week=WEEKS[-2], partial_week=WEEKS[-1]
    ),
    "weekly_by_reason": lambda: charts.weekly_by_reason(_by_reason(), partial_week=WEEKS[-1]),
    "edge_reason_heatmap": lambda: charts.edge_reason_heatmap(_cells(), _by_edge()),
    "this_vs_last": lambda: charts.this_vs_last(
        _by_edge(), "edge", this_week=WEEKS[-2], last_week=WEEKS[-3]
    ),
}


def test_every_chart_builder_is_checked() -> None:
    # A new chart in charts.py must be added to BUILDERS (and so to the checks below).
    public = {
        name for name, f in vars(charts).items()
        if callable(f) and not name.startswith("_") and getattr(f, "__module__", "") == charts.__name__
        and f.__annotations__.get("return") in (go.Figure, "go.Figure")
    }  # fmt: skip
    assert public == set(BUILDERS)


SCALED = {"control_flow"}
"""Charts whose marks are coloured by a number on a continuous scale (the control-flow
graph: an edge's and an agent's unhealthy share, green → amber → red, the share also
written beside it): only their legend entries are series."""


@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_every_series_of_every_chart_is_distinguishable(builder: str) -> None:
    fig = BUILDERS[builder]()
    looks = series_looks(fig, legend_only=builder in SCALED)
    if builder != "edge_reason_heatmap":
        assert looks, f"{builder} drew nothing"
    # One look is one series: two different things never share a look in one chart.
    for look, series in looks.items():
        assert len(series) == 1, f"{builder}: {sorted(series)} all drawn as {look}"
    # Two looks told apart by colour alone must be ΔE apart in every vision.
    for (c1, k1), (c2, k2) in itertools.combinations(looks, 2):
        if k1 != k2 or c1 == c2:
            continue
        for vision in VISIONS:
            d = math.dist(seen(c1, vision), seen(c2, vision))
            assert d >= style.MIN_DELTA_E, (
                f"{builder}: {sorted(looks[(c1, k1)])} {c1} vs {sorted(looks[(c2, k2)])} {c2} under "
                f"{vision or 'normal'}: ΔE {d:.1f}"
            )


@pytest.mark.parametrize("builder", sorted(BUILDERS))
def test_no_chart_has_a_second_scale(builder: str) -> None:
    fig = BUILDERS[builder]()
    layout = fig.to_plotly_json()["layout"]
    assert not [k for k in layout if re.fullmatch(r"[xy]axis\d+", k)], builder
    assert {getattr(t, "yaxis", None) or "y" for t in fig.data} <= {"y"}
    assert {getattr(t, "xaxis", None) or "x" for t in fig.data} <= {"x"}


def test_a_timeline_row_says_its_verdict() -> None:
    # Markers cannot be hatched: route and contract rejected share the brick there, so the
    # row label carries the verdict's words.
    spans, handoffs = _run()
    fig = charts.run_timeline(spans, handoffs)
    rows = list(fig.layout.yaxis.ticktext)
    for i, verdict in enumerate(handoffs["verdict"], start=1):
        assert rows[i].endswith(f" · {style.verdict_label(verdict)}"), rows[i]


# Red means a boundary failed. The control-flow graph is left out: its green → amber → red
# scale (style.share_color) is the share of an edge's handoffs that were unhealthy.
RED_MEANS_BOUNDARY = sorted(set(BUILDERS) - {"control_flow"})


@pytest.mark.parametrize("builder", RED_MEANS_BOUNDARY)
def test_only_boundary_failures_are_red(builder: str) -> None:
    fig = BUILDERS[builder]()
    reds = {c for c, _ in series_looks(fig) if _red_family(c)}
    assert reds <= set(style.BOUNDARY_REDS), f"{builder}: {reds - set(style.BOUNDARY_REDS)}"
