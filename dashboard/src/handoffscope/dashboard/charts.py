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
from collections import defaultdict
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


def unhealthy_timeline(timeline: pd.DataFrame, *, height: int = 300) -> go.Figure:
    """Handoffs per minute for the live board: the unhealthy verdicts stacked as bars on
    their own scale, the rest (healthy, in flight, waiting) one grey line — so a few
    failures are not a sliver on top of hundreds of healthy handoffs. The legend sits at
    the right, beside the plot, not above it."""
    fig = go.Figure()
    bad = timeline[[style.is_unhealthy(v) for v in timeline["verdict"]]]
    for verdict in _precedence_order(list(bad["verdict"].dropna())):
        rows = bad[bad["verdict"] == verdict]
        fig.add_bar(
            x=rows["minute"],
            y=rows["count"],
            name=style.verdict_label(verdict),
            marker_color=style.verdict_color(verdict),
            hovertemplate="%{x|%H:%M} UTC: %{y} handoffs<extra>%{fullData.name}</extra>",
        )
    rest = timeline[[not style.is_unhealthy(v) for v in timeline["verdict"]]]
    if len(rest):
        per_minute = rest.groupby("minute", as_index=False)["count"].sum()
        fig.add_scatter(
            x=per_minute["minute"],
            y=per_minute["count"],
            name="Not failing (all other verdicts)",
            mode="lines+markers",
            line={"color": "#64748b", "width": 1.5},
            yaxis="y2",
            hovertemplate="%{x|%H:%M} UTC: %{y} handoffs<extra>not failing</extra>",
        )
    fig.update_layout(
        barmode="stack",
        yaxis={"title": "unhealthy / min", "rangemode": "tozero"},
        yaxis2={
            "title": "other / min",
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
        },
    )
    top = bad.groupby("minute")["count"].sum().max() if len(bad) else 0
    _whole_numbers(fig, "y", top)
    fig.update_xaxes(title=None)
    _base(fig, height=height)
    fig.update_layout(
        legend={"orientation": "v", "x": 1.08, "y": 1, "xanchor": "left", "yanchor": "top"},
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
    )
    return fig


EDGE_DASH = {"declared": "solid", "undeclared": "dash", sc.KIND_DELEGATION: "dot"}
"""How a control-flow line is drawn: undeclared routes dashed, delegations dotted."""
DELEGATION_COLOR = "#475569"
WIDE_LAYERS = 6
"""Up to this many layers the control-flow graph runs left to right, else top to bottom."""


def flow_layers(pairs: Sequence[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Agent -> (column, row) for a left-to-right drawing of directed edges.

    Columns are longest-path layers of the graph with its back-edges removed (found by a
    depth-first walk from the agents that only send, busiest first), so the main flow
    reads left to right and a cycle shows as an arc going back. Rows within a column
    follow the mean row of the agents feeding it (two barycentre sweeps), which keeps
    most lines short. A hand-made layered layout rather than a force layout: at 20
    agents a spring layout puts the start of the flow anywhere and crosses most edges.
    """
    agents = list(dict.fromkeys(a for pair in pairs for a in pair))
    out: dict[str, list[str]] = {a: [] for a in agents}
    indeg = dict.fromkeys(agents, 0)
    for f, t in pairs:
        if f != t and t not in out[f]:
            out[f].append(t)
            indeg[t] += 1
    back: set[tuple[str, str]] = set()
    state: dict[str, int] = {}  # 1 on the walk's stack, 2 done

    def walk(a: str) -> None:
        state[a] = 1
        for t in out[a]:
            if state.get(t) == 1:
                back.add((a, t))
            elif t not in state:
                walk(t)
        state[a] = 2

    for a in sorted(agents, key=lambda a: (indeg[a] > 0, -len(out[a]))):
        if a not in state:
            walk(a)
    column = dict.fromkeys(agents, 0)
    for _ in agents:  # longest path on a DAG: at most len(agents) relaxations
        changed = False
        for f in agents:
            for t in out[f]:
                if (f, t) not in back and column[t] < column[f] + 1:
                    column[t] = column[f] + 1
                    changed = True
        if not changed:
            break
    by_column: dict[int, list[str]] = defaultdict(list)
    for a in agents:
        by_column[column[a]].append(a)
    row = {a: i for c in by_column.values() for i, a in enumerate(c)}
    feeders: dict[str, list[str]] = defaultdict(list)
    for f in agents:
        for t in out[f]:
            feeders[t].append(f)
    for _ in range(2):
        for c in sorted(by_column):
            members = by_column[c]
            members.sort(
                key=lambda a: (
                    sum(row[f] for f in feeders[a]) / len(feeders[a]) if feeders[a] else row[a]
                )
            )
            for i, a in enumerate(members):
                row[a] = i
    return {a: (column[a], row[a]) for a in agents}


def _bezier(p0: tuple[float, float], c: tuple[float, float], p1: tuple[float, float], t: float):
    x = (1 - t) ** 2 * p0[0] + 2 * (1 - t) * t * c[0] + t**2 * p1[0]
    y = (1 - t) ** 2 * p0[1] + 2 * (1 - t) * t * c[1] + t**2 * p1[1]
    return x, y


def _edge_geometry(
    p0: tuple[float, float], p1: tuple[float, float], *, back: bool
) -> tuple[str, tuple[float, float], tuple[float, float]]:
    """SVG path, label point and a point just before the head, for one edge.

    Every edge bends to the left of its direction of travel, so A→B and B→A never lie on
    one line; an edge going backwards (a cycle) bends more, to read as a return arc. A
    self-loop is a teardrop above its agent."""
    if p0 == p1:
        x, y = p0
        path = f"M {x - 0.06},{y + 0.05} C {x - 0.25},{y + 0.55} {x + 0.25},{y + 0.55} {x + 0.06},{y + 0.05}"
        return path, (x, y + 0.42), (x + 0.12, y + 0.2)
    dx, dy = p1[0] - p0[0], p1[1] - p0[1]
    bend = 0.35 if back else 0.12
    c = ((p0[0] + p1[0]) / 2 - dy * bend, (p0[1] + p1[1]) / 2 + dx * bend)
    path = f"M {p0[0]},{p0[1]} Q {c[0]},{c[1]} {p1[0]},{p1[1]}"
    return path, _bezier(p0, c, p1, 0.5), _bezier(p0, c, p1, 0.85)


def _received_share(edges: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """Agent -> (handoffs received, of them unhealthy); delegations not counted."""
    got: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in edges.itertuples():
        if r.kind == sc.KIND_DELEGATION:
            continue
        tally = got[style.text(r.to_agent, "?")]
        tally[0] += int(r.count)
        tally[1] += int(r.unhealthy)
    return {a: (n, u) for a, (n, u) in got.items()}


def control_flow(edges: pd.DataFrame, *, height: int | None = None) -> go.Figure:
    """Agent→agent edges as a directed graph that draws cycles and self-loops.

    Each line is an edge across runs: its label is the number of handoffs and the share
    unhealthy, its colour that share (green 0 % → red 100 %), its width the volume.
    Undeclared routes are dashed, delegations (`kind = delegation`, an agent called as a
    tool) dotted grey and labelled "calls". Each agent carries a health mark: the share
    of the handoffs it received that were unhealthy, as colour and in words.

    Plotly shapes rather than `st.graphviz_chart`: Streamlit's Graphviz element logs a
    console warning on every render (its d3-graphviz finds no worker script), and a
    Sankey cannot draw a back-edge or a self-loop.
    """
    edges = edges.assign(
        kind=edges["kind"].fillna(sc.KIND_HANDOFF),
        from_agent=[style.text(a, "?") for a in edges["from_agent"]],
        to_agent=[style.text(a, "?") for a in edges["to_agent"]],
    )
    pairs = list(zip(edges["from_agent"], edges["to_agent"], strict=True))
    where = flow_layers(pairs)
    tallest = max(
        (sum(1 for c, _ in where.values() if c == col) for col, _ in where.values()), default=1
    )
    columns = max((c for c, _ in where.values()), default=0)
    # Left to right while the layers fit the page's width; a long flow (20 agents, nine
    # layers) is drawn top to bottom instead, so agent names do not collide.
    across = columns < WIDE_LAYERS
    if across:
        pos = {a: (float(c), (tallest - 1) / 2 - r) for a, (c, r) in where.items()}
    else:
        pos = {a: (r - (tallest - 1) / 2, -float(c)) for a, (c, r) in where.items()}
    top = max(int(edges["count"].max()) if len(edges) else 1, 1)

    fig = go.Figure()
    # Shapes and annotations are collected and set once: each `add_shape` or
    # `add_annotation` re-validates the whole layout (3 s for 27 edges, measured).
    shapes: list[dict] = []
    notes: list[dict] = []
    label_x, label_y, hover = [], [], []
    for r in edges.itertuples():
        p0, p1 = pos[r.from_agent], pos[r.to_agent]
        back = where[r.to_agent][0] <= where[r.from_agent][0]
        path, mid, before = _edge_geometry(p0, p1, back=back)
        delegation = r.kind == sc.KIND_DELEGATION
        color = DELEGATION_COLOR if delegation else style.share_color(r.unhealthy_share, alpha=0.9)
        dash = EDGE_DASH[
            sc.KIND_DELEGATION if delegation else ("undeclared" if r.undeclared else "declared")
        ]
        width = 1.5 + 4.5 * math.log1p(int(r.count)) / math.log1p(top)
        shapes.append(
            {
                "type": "path",
                "path": path,
                "line": {"color": color, "width": width, "dash": dash},
                "layer": "below",
            }
        )
        notes.append(
            {
                "x": p1[0], "y": p1[1], "ax": before[0], "ay": before[1], "xref": "x",
                "yref": "y", "axref": "x", "ayref": "y", "text": "", "showarrow": True,
                "arrowhead": 2, "arrowsize": 1.1, "arrowwidth": 2, "arrowcolor": color,
                "standoff": 14,
            }
        )  # fmt: skip
        words = (
            style.count(r.count, "call")
            if delegation
            else f"{int(r.count):,} · {style.percent(r.unhealthy_share)}"
        )
        if r.undeclared and not delegation:
            words += " · undeclared"
        notes.append(
            {
                "x": mid[0], "y": mid[1], "text": words, "showarrow": False,
                "font": {"size": 11, "color": "#111827"},
                "bgcolor": "rgba(255,255,255,0.85)", "borderpad": 1,
            }
        )  # fmt: skip
        label_x.append(mid[0])
        label_y.append(mid[1])
        kind_words = (
            "delegation (agent called as a tool)"
            if delegation
            else (
                style.count(r.undeclared, "undeclared handoff")
                if r.undeclared
                else "declared route"
            )
        )
        hover.append(
            f"{_plain(r.from_agent)} → {_plain(r.to_agent)}<br>"
            f"{style.count(r.count, 'handoff' if not delegation else 'call')}, "
            f"{style.percent(r.unhealthy_share)} unhealthy<br>{kind_words}"
        )
    fig.add_scatter(
        x=label_x, y=label_y, mode="markers", marker={"size": 18, "opacity": 0},
        hovertext=hover, hoverinfo="text", showlegend=False,
    )  # fmt: skip

    received = _received_share(edges)
    names = list(pos)
    marks, colors, symbols = [], [], []
    for a in names:
        n, u = received.get(a, (0, 0))
        if n == 0:
            marks.append("sends only")
            colors.append("#94a3b8")
            symbols.append("circle-open")
        elif u == 0:
            marks.append(f"✓ {n:,} in, healthy")
            colors.append(style.HEALTHY_GREEN)
            symbols.append("circle")
        else:
            marks.append(f"⚠ {style.percent(u / n)} of {n:,} in")
            colors.append(style.share_color(u / n, alpha=1.0))
            symbols.append("diamond")
    fig.add_scatter(
        x=[pos[a][0] for a in names], y=[pos[a][1] for a in names], mode="markers+text",
        text=[f"<b>{_plain(a)}</b><br>{m}" for a, m in zip(names, marks, strict=True)],
        textposition="bottom center" if across else "middle right", textfont={"size": 12},
        marker={"size": 22, "color": colors, "symbol": symbols, "line": {"width": 2, "color": "white"}},
        hovertext=[
            f"{_plain(a)}: {received.get(a, (0, 0))[1]:,} of {received.get(a, (0, 0))[0]:,} "
            "handoffs received unhealthy"
            for a in names
        ],
        hoverinfo="text", showlegend=False,
    )  # fmt: skip
    for name, dash, color in (
        ("declared route", EDGE_DASH["declared"], "#64748b"),
        ("undeclared route", EDGE_DASH["undeclared"], "#64748b"),
        ("delegation (agent as a tool)", EDGE_DASH[sc.KIND_DELEGATION], DELEGATION_COLOR),
    ):
        fig.add_scatter(
            x=[None], y=[None], mode="lines", name=name,
            line={"dash": dash, "color": color, "width": 3}, hoverinfo="skip",
        )  # fmt: skip
    half = (tallest - 1) / 2
    if across:
        fig.update_xaxes(visible=False, range=[-0.5, columns + 0.5])
        loops = any(f == t for f, t in pairs)  # a self-loop needs the room above its agent
        fig.update_yaxes(visible=False, range=[-half - 0.7, half + (0.8 if loops else 0.35)])
    else:
        fig.update_xaxes(visible=False, range=[-half - 0.5, half + 0.9])
        fig.update_yaxes(visible=False, range=[-columns - 0.4, 0.6])
    fig.update_layout(
        shapes=shapes, annotations=notes, plot_bgcolor="rgba(0,0,0,0)", hovermode="closest"
    )
    rows = tallest if across else columns + 1
    return _base(fig, height=height or max(360, 120 * rows + 120))


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


DEADLINE_BUCKETS = (
    ("overdue > 1 h", None, -3600.0),
    ("overdue ≤ 1 h", -3600.0, 0.0),
    ("due in ≤ 15 min", 0.0, 900.0),
    ("due in ≤ 1 h", 900.0, 3600.0),
    ("due later", 3600.0, None),
)
"""(label, lower, upper) seconds left: where each wait's deadline falls."""
UNCERTAIN_BUCKET = "uncertain (a fact missing)"
"""Waits whose checkpoint lacks a fact: their deadline, if any, cannot be trusted."""
MAX_OWNER_BARS = 12
"""Owners drawn apart in the deadline chart; the rest are one bar, "other owners"."""


def deadline_buckets(approvals: pd.DataFrame, *, no_owner: str = "no owner") -> go.Figure:
    """Open waits counted by owner and by where their deadline falls, one stacked bar per
    owner (at most MAX_OWNER_BARS, the worst first), overdue on the left.

    A bar per wait (the chart this replaces) grew the page by 36 px a wait — 9,800 px at
    200 waits — and drew the urgent, overdue ones as slivers beside far-off deadlines; a
    count per bucket stays one screen tall at a thousand waits. Overdue buckets take the
    overdue colour, due ones the waiting colour (darker: sooner); a wait with no deadline
    is uncertain, and so is any wait whose checkpoint lacks a fact: those are counted in
    their own bucket, in the uncertain colour, whatever their deadline says.
    """
    df = approvals.assign(_owner=[_plain(o, no_owner) for o in approvals["owner"]])
    left = df["seconds_left"].astype(float)
    labels = []
    for value, verdict in zip(left, df["verdict"], strict=True):
        if math.isnan(value) or verdict == sc.WAIT_UNCERTAIN:
            labels.append(UNCERTAIN_BUCKET)
            continue
        for label, lo, hi in DEADLINE_BUCKETS:
            if (lo is None or value >= lo) and (hi is None or value < hi):
                labels.append(label)
                break
    df["_bucket"] = labels
    urgency = df.groupby("_owner")["seconds_left"].min().fillna(float("inf"))
    owners = list(urgency.sort_values().index)
    if len(owners) > MAX_OWNER_BARS:
        kept = set(owners[: MAX_OWNER_BARS - 1])
        df["_owner"] = [o if o in kept else "other owners" for o in df["_owner"]]
        owners = [*owners[: MAX_OWNER_BARS - 1], "other owners"]
    counts = df.groupby(["_owner", "_bucket"]).size()
    overdue = style.verdict_color(sc.APPROVAL_OVERDUE)
    waiting = style.verdict_color(sc.WAITING_ON_APPROVAL)
    colors = {
        "overdue > 1 h": overdue,
        "overdue ≤ 1 h": overdue,
        "due in ≤ 15 min": waiting,
        "due in ≤ 1 h": waiting,
        "due later": waiting,
        UNCERTAIN_BUCKET: style.verdict_color(sc.WAIT_UNCERTAIN),
    }
    # Within one colour, nearer buckets are solid and farther ones lighter: the bucket is
    # also named in the legend and the hover, never told by shade alone.
    opacity = {"overdue > 1 h": 1.0, "overdue ≤ 1 h": 0.7, "due in ≤ 15 min": 1.0}
    opacity |= {"due in ≤ 1 h": 0.7, "due later": 0.45, UNCERTAIN_BUCKET: 1.0}
    fig = go.Figure()
    for label in [b[0] for b in DEADLINE_BUCKETS] + [UNCERTAIN_BUCKET]:
        xs = [int(counts.get((o, label), 0)) for o in owners]
        if not any(xs):
            continue
        fig.add_trace(
            go.Bar(
                x=xs,
                y=owners,
                name=label,
                orientation="h",
                marker={"color": colors[label], "opacity": opacity[label]},
                hovertemplate="%{y}: %{x} " + label + "<extra></extra>",
            )
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(title="open waits")
    totals = df.groupby("_owner").size()
    _whole_numbers(fig, "x", totals.max() if len(totals) else 0)
    return _base(fig, height=max(200, 30 * len(owners) + 110))


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


PARTIAL_PATTERN = {
    "shape": "/", "fillmode": "overlay", "fgcolor": "white", "size": 7, "solidity": 0.45,
}  # fmt: skip
"""Hatching for the current, partial week: its bar must not read like a whole week's."""


def _week_ticks(weeks: Sequence[str], partial_week: str | None) -> list[str]:
    return [f"{w}<br>(partial)" if w == partial_week else str(w) for w in weeks]


def weekly_rate(
    weeks: pd.DataFrame,
    *,
    this_week: str | None,
    partial_week: str | None = None,
    height: int = 300,
) -> go.Figure:
    """Rejection rate per ISO week; `this_week` (the week compared) in red, the partial
    week hatched and labelled "(partial)"."""
    colors = ["#991b1b" if w == this_week else "#94a3b8" for w in weeks["week"]]
    rates = pd.to_numeric(weeks["rate"], errors="coerce").astype(float)
    fig = go.Figure(
        go.Bar(
            x=_week_ticks(list(weeks["week"]), partial_week),
            y=rates * 100,
            marker={
                "color": colors,
                "pattern": {
                    **PARTIAL_PATTERN,
                    "shape": ["/" if w == partial_week else "" for w in weeks["week"]],
                },
            },
            customdata=list(zip(weeks["rejections"], weeks["handoffs"], strict=True)),
            text=[style.percent(r) for r in rates],
            textposition="outside",
            hovertemplate="%{x}: %{y:.1f} % (%{customdata[0]} of %{customdata[1]} handoffs)<extra></extra>",
        )
    )
    fig.update_yaxes(title="rejection rate (% of handoffs)", rangemode="tozero")
    fig.update_xaxes(title="ISO week", type="category")
    return _base(fig, height=height)


def weekly_by_reason(
    by_reason: pd.DataFrame, *, partial_week: str | None = None, height: int = 320
) -> go.Figure:
    """Rejection rate per week, stacked by reason (each a share of the week's handoffs, so
    the stack is the week's rejection rate); the partial week hatched."""
    fig = go.Figure()
    known = list(style.REASON_COLORS)
    present = set(by_reason["reason"].dropna())
    weeks = sorted(set(by_reason["week"]))
    ticks = dict(zip(weeks, _week_ticks(weeks, partial_week), strict=True))
    for reason in [r for r in known if r in present] + sorted(present - set(known)):
        rows = by_reason[by_reason["reason"] == reason]
        fig.add_bar(
            x=[ticks[w] for w in rows["week"]],
            y=pd.to_numeric(rows["rate"], errors="coerce").astype(float) * 100,
            customdata=list(rows["count"]),
            name=style.reason_label(reason),
            marker={
                "color": style.REASON_COLORS.get(reason, style.UNKNOWN_COLOR),
                "pattern": {
                    **PARTIAL_PATTERN,
                    "shape": ["/" if w == partial_week else "" for w in rows["week"]],
                },
            },
            hovertemplate="%{x}: %{y:.1f} % of handoffs (%{customdata} rejections)<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(title="rejection rate (% of handoffs)", rangemode="tozero")
    fig.update_xaxes(
        title="ISO week", type="category", categoryorder="array", categoryarray=list(ticks.values())
    )
    return _base(fig, height=height)


def edge_reason_heatmap(
    cells: pd.DataFrame, edges: pd.DataFrame, *, top: int = 15, height: int | None = None
) -> go.Figure:
    """Edge × reason: the share of an edge's handoffs refused for each reason, over the
    weeks in `cells` (by_edge_reason rows) and `edges` (by_edge rows, for the totals).

    Rates are summed counts over summed handoffs — never an average of weekly rates,
    which would weigh a quiet week like a busy one. The `top` edges with most rejections."""

    def name(f: object, t: object) -> str:
        return style.edge(f, t)

    handoffs: dict[str, int] = defaultdict(int)
    for r in edges.itertuples():
        handoffs[name(r.from_agent, r.to_agent)] += int(r.handoffs)
    refused: dict[tuple[str, str], int] = defaultdict(int)
    for r in cells.itertuples():
        refused[(name(r.from_agent, r.to_agent), str(r.reason))] += int(r.count)
    per_edge: dict[str, int] = defaultdict(int)
    for (e, _), n in refused.items():
        per_edge[e] += n
    rows = sorted(per_edge, key=lambda e: (-per_edge[e], e))[:top]
    known = list(style.REASON_COLORS)
    present = {r for _, r in refused}
    cols = [r for r in known if r in present] + sorted(present - set(known))
    z, text, custom = [], [], []
    for e in rows:
        total = handoffs.get(e, 0)
        line, words, extra = [], [], []
        for reason in cols:
            n = refused.get((e, reason), 0)
            share = n / total if total else None
            line.append(share * 100 if share is not None else None)
            words.append(style.percent(share) if n else "")
            extra.append(f"{n:,} of {total:,} handoffs")
        z.append(line)
        text.append(words)
        custom.append(extra)
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[style.reason_label(r) for r in cols],
            y=[_plain(e) for e in rows],
            text=text,
            texttemplate="%{text}",
            customdata=custom,
            colorscale=[[0, "#f8fafc"], [0.001, "#fde2e2"], [1, "#991b1b"]],
            zmin=0,
            colorbar={"title": {"text": "% refused"}, "ticksuffix": " %"},
            hovertemplate="%{y}, %{x}: %{z:.1f} % (%{customdata})<extra></extra>",
            xgap=2,
            ygap=2,
        )
    )
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(side="top", type="category")
    return _base(fig, height=height or max(220, 34 * len(rows) + 110))


def this_vs_last(
    df: pd.DataFrame,
    key: str,
    *,
    this_week: str | None,
    last_week: str | None,
    names: tuple[str, str] = ("last week", "week before"),
    height: int | None = None,
) -> go.Figure:
    """Rejection rate per `key` (edge or agent), `this_week` beside `last_week` (by
    default the last whole week and the one before: the page never sets a partial week
    against a whole one)."""
    fig = go.Figure()
    df = df[df["week"].isin([this_week, last_week])]
    keys = list(dict.fromkeys(df.sort_values("rate", ascending=False)[key]))
    for week, color, name in (
        (last_week, "#94a3b8", names[1]),
        (this_week, "#991b1b", names[0]),
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
