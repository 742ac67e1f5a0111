"""Plotly figures for the pages: pure functions from frames to figures, no Streamlit.

Text from the wire (agent names, ids, attribute values) goes through `_plain`: plotly reads
a few HTML tags in labels and hovers (`<a href>`, `<b>`), and an agent name is not markup.

Every figure colours verdicts with `style.VERDICT_COLORS` and names them in words, labels
its axes with units, and puts the numbers an operator compares into the hover text.
Keeping them free of Streamlit lets a page stay a short list of "fetch, then draw".
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go

from handoffscope.dashboard import style
from handoffscope.instrumentation import semconv as sc

FONT = {"family": "Inter, system-ui, sans-serif", "size": 13}


def _base(fig: go.Figure, *, height: int, title: str | None = None) -> go.Figure:
    fig.update_layout(
        height=height,
        margin={"l": 10, "r": 10, "t": 40 if title else 10, "b": 10},
        font=FONT,
        title={"text": title} if title else None,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
    )
    return fig


def _plain(value: object, default: str = "?") -> str:
    return html.escape(style.text(value, default), quote=False)


def _whole_numbers(fig: go.Figure, axis: str, top: float) -> None:
    """Counts are whole: no "0.5 handoffs" tick on a small chart."""
    step = max(1, math.ceil(float(top or 0) / 6))
    getattr(fig, f"update_{axis}axes")(dtick=step, tick0=0, rangemode="tozero")


def _precedence_order(verdicts: Sequence[str]) -> list[str]:
    return sorted(set(verdicts), key=lambda v: sc.RANK.get(v, len(sc.PRECEDENCE)))


def verdict_counts(counts: Mapping[str, int], *, height: int = 320) -> go.Figure:
    """Handoffs per verdict, worst first, one bar a verdict in its colour."""
    order = _precedence_order([v for v, n in counts.items() if n])
    labels = [style.verdict_label(v) for v in order]
    values = [int(counts[v]) for v in order]
    fig = go.Figure(
        go.Bar(
            x=values,
            y=labels,
            orientation="h",
            marker_color=[style.verdict_color(v) for v in order],
            text=[style.count(n, "handoff") for n in values],
            textposition="auto",
            hovertemplate="%{y}: %{x} handoffs<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(title="handoffs")
    _whole_numbers(fig, "x", max(values, default=0))
    return _base(fig, height=max(height, 40 * len(order) + 60))


def verdict_timeline(timeline: pd.DataFrame, *, height: int = 280) -> go.Figure:
    """Handoffs per minute, stacked by verdict (worst at the bottom, where the eye lands)."""
    fig = go.Figure()
    for verdict in _precedence_order(list(timeline["verdict"].dropna())):
        rows = timeline[timeline["verdict"] == verdict]
        fig.add_bar(
            x=rows["minute"],
            y=rows["count"],
            name=style.verdict_label(verdict),
            marker_color=style.verdict_color(verdict),
            hovertemplate="%{x|%H:%M} UTC: %{y} handoffs<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="handoffs per minute")
    _whole_numbers(
        fig, "y", timeline.groupby("minute")["count"].sum().max() if len(timeline) else 0
    )
    fig.update_xaxes(title="time (UTC)")
    return _base(fig, height=height)


def control_flow(edges: pd.DataFrame, *, height: int = 460) -> go.Figure:
    """Agent→agent edges as a Sankey: width = handoffs, colour = unhealthy share.

    Undeclared edges get a dark outline: plotly links cannot be dashed, and colour alone
    already carries the unhealthy share.
    """
    agents: list[str] = []
    for a in list(edges["from_agent"]) + list(edges["to_agent"]):
        name = style.text(a, "?")
        if name not in agents:
            agents.append(name)
    index = {a: i for i, a in enumerate(agents)}
    undeclared = edges["undeclared"] > 0
    custom = [
        [
            style.count(r.count, "handoff"),
            style.percent(r.unhealthy_share),
            style.count(r.undeclared, "undeclared handoff") if r.undeclared else "declared route",
        ]
        for r in edges.itertuples()
    ]
    fig = go.Figure(
        go.Sankey(
            arrangement="snap",
            node={
                "label": [_plain(a) for a in agents],
                "pad": 24,
                "thickness": 18,
                "color": "#334155",
                "hovertemplate": "%{label}: %{value} handoffs<extra></extra>",
            },
            link={
                "source": [index[style.text(a, "?")] for a in edges["from_agent"]],
                "target": [index[style.text(a, "?")] for a in edges["to_agent"]],
                "value": list(edges["count"]),
                "color": [style.share_color(s) for s in edges["unhealthy_share"]],
                "line": {
                    "color": ["#111827" if u else "rgba(0,0,0,0)" for u in undeclared],
                    "width": [2.5 if u else 0 for u in undeclared],
                },
                "customdata": custom,
                "hovertemplate": (
                    "%{source.label} → %{target.label}<br>%{customdata[0]}, "
                    "%{customdata[1]} unhealthy<br>%{customdata[2]}<extra></extra>"
                ),
            },
        )
    )
    return _base(fig, height=height)


def agent_path(
    agents: Sequence[str],
    *,
    step_verdicts: Sequence[str | None] = (),
    title: str | None = None,
    height: int = 120,
) -> go.Figure:
    """A path of agents left to right, arrows coloured by each handoff's verdict.

    Used for a run's path and for a loop's cycle: an agent keeps its colour wherever it
    reappears, so the back-edge of a cycle is visible at a glance.
    """
    agents = [str(a) for a in agents]
    palette = ["#1e3a8a", "#0f766e", "#7c2d12", "#4c1d95", "#831843", "#365314", "#1f2937"]
    agent_color = {a: palette[i % len(palette)] for i, a in enumerate(dict.fromkeys(agents))}
    xs = list(range(len(agents)))
    fig = go.Figure(
        go.Scatter(
            x=xs,
            y=[0] * len(agents),
            mode="markers+text",
            text=[_plain(a) for a in agents],
            textposition="top center",
            marker={
                "size": 26,
                "color": [agent_color[a] for a in agents],
                "line": {"width": 2, "color": "white"},
            },
            hovertemplate="step %{x}: %{text}<extra></extra>",
        )
    )
    for i in range(len(agents) - 1):
        verdict = step_verdicts[i] if i < len(step_verdicts) else None
        fig.add_annotation(
            x=xs[i + 1] - 0.12,
            y=0,
            ax=xs[i] + 0.12,
            ay=0,
            xref="x",
            yref="y",
            axref="x",
            ayref="y",
            showarrow=True,
            arrowhead=3,
            arrowsize=1.4,
            arrowwidth=3,
            arrowcolor=style.verdict_color(verdict) if verdict else "#64748b",
            hovertext=style.verdict_label(verdict) if verdict else None,
        )
    fig.update_xaxes(visible=False, range=[-0.5, max(len(agents) - 0.5, 0.5)])
    fig.update_yaxes(visible=False, range=[-0.4, 0.7])
    fig.update_layout(showlegend=False, plot_bgcolor="rgba(0,0,0,0)")
    return _base(fig, height=height, title=title)


SPAN_OFFSETS = {
    sc.SPAN_REQUEST: -0.3,
    sc.SPAN_TRANSFER: -0.1,
    sc.SPAN_ACCEPT: 0.1,
    sc.SPAN_WAIT: 0.3,
    sc.SPAN_OUTCOME: 0.3,
}
"""Each kind of evidence a little above or below its handoff's row: a shim sends request,
transfer and accept within milliseconds, and on one line they would hide each other."""


OTHER_HANDOFFS = "other handoffs"
"""The timeline row of spans whose handoff is not on the page shown."""


def run_timeline(
    spans: pd.DataFrame,
    handoffs: pd.DataFrame,
    *,
    numbers: Sequence[int] | None = None,
    height: int | None = None,
) -> go.Figure:
    """The run's evidence spans over time: one row per handoff listed (plus the run itself,
    and one row for spans of handoffs not listed), one marker a span, shaped by span kind
    and coloured by the handoff's verdict. `numbers`: each listed handoff's position in
    the run (default 1, 2, ...).

    The figure has a fixed number of traces whatever the run's size — markers and
    duration bars are one scatter trace per span kind, row separators are gridlines —
    because plotly lays out every shape and annotation on its own, and one per span or
    handoff made big runs take minutes to draw.
    """
    numbers = list(numbers) if numbers is not None else list(range(1, len(handoffs) + 1))
    keys: list[str | None] = [None, *[style.text(h) or None for h in handoffs["handoff_id"]]]
    labels = ["run"] + [
        f"#{n} {_plain(style.edge(h.from_agent, h.to_agent))}"
        for n, h in zip(numbers, handoffs.itertuples(), strict=True)
    ]
    colors = {None: "#334155"} | {
        style.text(h.handoff_id): style.verdict_color(h.verdict) for h in handoffs.itertuples()
    }
    row_of = {k: i for i, k in enumerate(keys)}
    # A list, not a column: in a pandas 3 string column None turns into NaN, which is no key.
    span_keys = [style.text(h) or None for h in spans["handoff_id"]]
    if any(k not in row_of for k in span_keys):
        labels.append(OTHER_HANDOFFS)
    other = len(labels) - 1

    fig = go.Figure()
    df = spans.copy()
    rows = [row_of.get(k, other) for k in span_keys]
    df["y"] = [r + SPAN_OFFSETS.get(n, 0.0) for r, n in zip(rows, df["name"], strict=True)]
    df["color"] = [colors.get(k, style.UNKNOWN_COLOR) for k in span_keys]
    df["row"] = [
        labels[r] if k in row_of else f"handoff {_plain(k)}"
        for r, k in zip(rows, span_keys, strict=True)
    ]
    names = set(df["name"])
    for name in [n for n in sc.SPAN_NAMES if n in names] + sorted(names - set(sc.SPAN_NAMES)):
        part = df[df["name"] == name]
        label = style.SPAN_LABELS.get(name, name)
        # Span durations as thin bars from start to end (most evidence spans are instants):
        # one line trace, segments separated by gaps.
        xs: list = []
        ys: list = []
        for r in part.itertuples():
            if pd.notna(r.end) and pd.notna(r.start) and r.end > r.start:
                xs += [r.start, r.end, None]
                ys += [r.y, r.y, None]
        if xs:
            fig.add_scatter(
                x=xs, y=ys, mode="lines", line={"color": "#94a3b8", "width": 3},
                hoverinfo="skip", showlegend=False, legendgroup=label,
            )  # fmt: skip
        fig.add_scatter(
            x=part["start"],
            y=part["y"],
            mode="markers",
            name=label,
            legendgroup=label,
            marker={
                "symbol": style.SPAN_SYMBOLS.get(name, "circle"),
                "size": 10,
                "color": list(part["color"]),
                "line": {"width": 1, "color": "white"},
            },
            customdata=list(
                zip(part["row"], [_attribute_lines(a) for a in part["attributes"]], strict=True)
            ),
            hovertemplate=(
                "%{fullData.name} at %{x|%H:%M:%S.%L} UTC<br>%{customdata[1]}"
                "<extra>%{customdata[0]}</extra>"
            ),
        )
    fig.update_yaxes(
        tickmode="array",
        tickvals=list(range(len(labels))),
        ticktext=labels,
        range=[len(labels) - 0.5, -0.5],  # first handoff on top
        showgrid=False,
        zeroline=False,
        title=None,
        minor={
            "tickmode": "array",
            "tickvals": [i + 0.5 for i in range(len(labels) - 1)],
            "showgrid": True,
            "gridcolor": "#e5e7eb",
            "ticks": "",
        },
    )
    fig.update_xaxes(title="time (UTC)")
    row_px = 64 if len(labels) <= 20 else 22
    return _base(fig, height=height or max(220, row_px * len(labels) + 100))


def _attribute_lines(attrs: object) -> str:
    """Contract attributes as "name = value" lines for a hover (no JSON on screen)."""
    if not isinstance(attrs, Mapping) or not attrs:
        return "no attributes"
    lines = []
    for k in sorted(attrs):
        v = attrs[k]
        if isinstance(v, list | tuple):
            v = ", ".join(map(str, v)) or "(none)"
        lines.append(f"{_plain(k)} = {_plain(v)}")
    return "<br>".join(lines)


def time_left(approvals: pd.DataFrame, *, height: int | None = None) -> go.Figure:
    """Open waits as bars of minutes left (negative: overdue), coloured by verdict."""
    df = approvals.copy()
    df["minutes"] = df["seconds_left"].astype(float) / 60.0
    df["row"] = [
        f"{_plain(o, 'no owner')} · {_plain(r)}"
        for o, r in zip(df["owner"], df["run_id"], strict=True)
    ]
    df["words"] = [style.time_left(s) for s in df["seconds_left"]]
    has_deadline = df["minutes"].notna()
    fig = go.Figure(
        go.Bar(
            x=df.loc[has_deadline, "minutes"],
            y=df.loc[has_deadline, "row"],
            orientation="h",
            marker_color=[style.verdict_color(v) for v in df.loc[has_deadline, "verdict"]],
            # Words in the hover, not on the bar: a short overdue bar would clip them, and
            # the table beside the chart already says the time left in words.
            customdata=df.loc[has_deadline, "words"],
            hovertemplate="%{y}: %{customdata}<extra></extra>",
        )
    )
    fig.add_vline(x=0, line_width=2, line_color="#111827")
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(title="minutes to deadline (negative: overdue)")
    n = int(has_deadline.sum())
    return _base(fig, height=height or max(180, 36 * n + 80))


def counts_by(
    df: pd.DataFrame, column: str, *, unit: str, color: str, height: int = 160
) -> go.Figure:
    """How many rows per value of `column`, largest first."""
    counts = df[column].fillna("?").astype(str).value_counts()
    fig = go.Figure(
        go.Bar(
            x=counts.values,
            y=[_plain(v) for v in counts.index],
            orientation="h",
            marker_color=color,
            text=[style.count(n, unit) for n in counts.values],
            textposition="auto",
            hovertemplate="%{y}: %{x}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(title=unit + "s")
    _whole_numbers(fig, "x", counts.max() if len(counts) else 0)
    return _base(fig, height=max(height, 36 * len(counts) + 80))


def weekly_rate(weeks: pd.DataFrame, *, this_week: str | None, height: int = 300) -> go.Figure:
    """Rejection rate per ISO week, this week highlighted."""
    colors = ["#991b1b" if w == this_week else "#94a3b8" for w in weeks["week"]]
    fig = go.Figure(
        go.Bar(
            x=weeks["week"],
            y=weeks["rate"].astype(float) * 100,
            marker_color=colors,
            customdata=list(zip(weeks["rejections"], weeks["handoffs"], strict=True)),
            text=[style.percent(r) for r in weeks["rate"].astype(float)],
            textposition="outside",
            hovertemplate="%{x}: %{y:.1f} % (%{customdata[0]} of %{customdata[1]} handoffs)<extra></extra>",
        )
    )
    fig.update_yaxes(title="rejection rate (%)", rangemode="tozero")
    fig.update_xaxes(title="ISO week", type="category")
    return _base(fig, height=height)


def weekly_by_reason(by_reason: pd.DataFrame, *, height: int = 320) -> go.Figure:
    """Rejections per week, stacked by reason."""
    fig = go.Figure()
    known = list(style.REASON_COLORS)
    present = set(by_reason["reason"].dropna())
    for reason in [r for r in known if r in present] + sorted(present - set(known)):
        rows = by_reason[by_reason["reason"] == reason]
        fig.add_bar(
            x=rows["week"],
            y=rows["count"],
            name=style.reason_label(reason),
            marker_color=style.REASON_COLORS.get(reason, style.UNKNOWN_COLOR),
            hovertemplate="%{x}: %{y} rejections<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="rejections")
    _whole_numbers(
        fig, "y", by_reason.groupby("week")["count"].sum().max() if len(by_reason) else 0
    )
    fig.update_xaxes(title="ISO week", type="category", categoryorder="category ascending")
    return _base(fig, height=height)


def this_vs_last(
    df: pd.DataFrame,
    key: str,
    *,
    this_week: str | None,
    last_week: str | None,
    height: int | None = None,
) -> go.Figure:
    """Rejection rate per `key` (edge or agent), this week beside last week."""
    fig = go.Figure()
    keys = list(dict.fromkeys(df.sort_values("rate", ascending=False)[key]))
    for week, color, name in (
        (last_week, "#94a3b8", "last week"),
        (this_week, "#991b1b", "this week"),
    ):
        rows = df[df["week"] == week].set_index(key).reindex(keys)
        fig.add_bar(
            y=[_plain(k) for k in keys],
            x=rows["rate"].astype(float) * 100,
            orientation="h",
            name=f"{name} ({week})" if week else name,
            marker_color=color,
            customdata=list(
                zip(rows["rejections"].fillna(0), rows["handoffs"].fillna(0), strict=True)
            ),
            hovertemplate="%{y}: %{x:.1f} % (%{customdata[0]} of %{customdata[1]} handoffs)<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(barmode="group")
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(title="rejection rate (%)", rangemode="tozero")
    return _base(fig, height=height or max(220, 48 * len(keys) + 90))
