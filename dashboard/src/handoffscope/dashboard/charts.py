"""Plotly figures for the pages: pure functions from frames to figures, no Streamlit.

Text from the wire (agent names, ids, attribute values) goes through `_plain`: plotly reads
a few HTML tags in labels and hovers (`<a href>`, `<b>`), and an agent name is not markup.

Every figure colours verdicts with `style.VERDICT_COLORS` (bars also hatch with
`style.VERDICT_PATTERNS`) and names them in words, has one y-scale, labels its axes with
units, and puts the numbers an operator compares into the hover text.
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
            marker={
                "color": [style.verdict_color(v) for v in order],
                "pattern": style.bar_pattern(
                    [style.VERDICT_PATTERNS.get(v, "") for v in order],
                    [style.verdict_color(v) for v in order],
                ),
            },
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
    """Unhealthy handoffs per minute for the live board, stacked by verdict on one scale.

    Healthy, in-flight and waiting handoffs are not drawn here but on their own small chart
    (`handoffs_per_minute`): on one scale a few failures were a sliver under hundreds of
    healthy handoffs, and a second y-axis (the chart this replaces) drew a line on another
    scale towering over the bars, which read as more traffic than failures. The six
    boundary failures are three reds, plain or hatched (`style.VERDICT_PATTERNS`). The
    legend sits at the right, beside the plot, not above it."""
    fig = go.Figure()
    bad = timeline[[style.is_unhealthy(v) for v in timeline["verdict"]]]
    for verdict in _precedence_order(list(bad["verdict"].dropna())):
        rows = bad[bad["verdict"] == verdict]
        color = style.verdict_color(verdict)
        fig.add_bar(
            x=rows["minute"],
            y=rows["count"],
            name=style.verdict_label(verdict),
            marker={
                "color": color,
                "pattern": style.bar_pattern(style.VERDICT_PATTERNS.get(verdict, ""), color),
            },
            hovertemplate="%{x|%H:%M} UTC: %{y} handoffs<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(barmode="stack", yaxis={"title": "unhealthy / min", "rangemode": "tozero"})
    top = bad.groupby("minute")["count"].sum().max() if len(bad) else 0
    _whole_numbers(fig, "y", top)
    fig.update_xaxes(title=None)
    _base(fig, height=height)
    fig.update_layout(
        legend={"orientation": "v", "x": 1.02, "y": 1, "xanchor": "left", "yanchor": "top"},
        margin={"l": 10, "r": 10, "t": 10, "b": 10},
    )
    return fig


def handoffs_per_minute(timeline: pd.DataFrame, *, height: int = 160) -> go.Figure:
    """Every handoff per minute, whatever its verdict, one neutral bar a minute: the traffic
    under `unhealthy_timeline`, on its own scale and its own chart. The hover says how many
    of the minute's handoffs were unhealthy."""
    unhealthy = [style.is_unhealthy(v) for v in timeline["verdict"]]
    per_minute = (
        timeline.assign(_bad=timeline["count"].where(unhealthy, 0))
        .groupby("minute", as_index=False)[["count", "_bad"]]
        .sum()
    )
    fig = go.Figure(
        go.Bar(
            x=per_minute["minute"],
            y=per_minute["count"],
            name="All handoffs",
            marker_color=style.NEUTRAL,
            customdata=list(per_minute["_bad"]),
            hovertemplate="%{x|%H:%M} UTC: %{y} handoffs, %{customdata} unhealthy<extra></extra>",
        )
    )
    fig.update_yaxes(title="all / min", rangemode="tozero")
    _whole_numbers(fig, "y", per_minute["count"].max() if len(per_minute) else 0)
    fig.update_xaxes(title=None)
    _base(fig, height=height)
    fig.update_layout(showlegend=False, margin={"l": 10, "r": 10, "t": 10, "b": 10})
    return fig


EDGE_DASH = {"declared": "solid", "undeclared": "dash", sc.KIND_DELEGATION: "dot"}
"""How a control-flow line is drawn: an edge with any undeclared handoff dashed,
delegations dotted."""
DELEGATION_COLOR = "#475569"
WIDE_LAYERS = 6
"""Up to this many layers the control-flow graph runs left to right, else top to bottom."""

Point = tuple[float, float]
Segment = tuple[Point, Point, Point, Point]
"""One cubic Bézier piece of an edge: start, two control points, end."""

FLOW_WIDTH_PX = 900
"""The narrowest plot the control-flow layout is computed for. Its coordinates are pixels
at this width (y downwards); a wider page stretches x, which only moves things apart."""
FLOW_MARGIN = {"l": 10, "r": 10, "t": 36, "b": 10}
NODE_RADIUS_PX = 11
"""Half the agent marker (size 22)."""
EDGE_FONT_PX = 11
NODE_FONT_PX = 12
CHAR_EM = 0.62
"""Average glyph width of the UI font in ems, to size a label's box before it is drawn."""
LAYER_GAP_PX = (56, 120)
"""Distance between layers: the most while the graph fits FLOW_MAX_HEIGHT_PX, never less
than the least (room for a row of edge labels between two layers, so past 25 layers the
graph does grow beyond that height)."""
ROW_GAP_PX = 100
FLOW_MAX_HEIGHT_PX = 1500
FLOW_PAD_PX = {"top": 56, "bottom": 48, "side": 24}
"""Room around the agents: above for a self-loop, below for the last agents' labels."""
ROUTE_BEND_PX = 18
"""How far an edge bends off its straight course when the reverse edge exists (so A→B and
B→A never lie on one line), and every back-edge (so a cycle reads as a return arc)."""
LANE_PX = 10
"""Spacing of long edges that pass through the same gap of a layer."""


def flow_layers(pairs: Sequence[tuple[str, str]]) -> dict[str, tuple[int, int]]:
    """Agent -> (layer, position in the layer) for a layered drawing of directed edges.

    Layers are longest-path layers of the graph with its back-edges removed (found by a
    depth-first walk from the agents that only send, busiest first), so the main flow
    reads in one direction and a cycle shows as an arc going back. Positions within a
    layer follow the mean position of the agents each is linked to (barycentre sweeps,
    down then up), which keeps most lines short and uncrossed. A hand-made layered layout
    rather than a force layout: at 20 agents a spring layout puts the start of the flow
    anywhere and crosses most edges.
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
    fed: dict[str, list[str]] = defaultdict(list)
    for f in agents:
        for t in out[f]:
            feeders[t].append(f)
            fed[f].append(t)

    size = {c: len(m) for c, m in by_column.items()}  # (a list is empty while it sorts)

    def centre(a: str, links: list[str]) -> float:
        # Positions are compared across layers of different sizes: as a share of the layer.
        if not links:
            return (row[a] + 0.5) / size[column[a]]
        return sum((row[n] + 0.5) / size[column[n]] for n in links) / len(links)

    for sweep in range(4):
        down = sweep % 2 == 0
        for c in sorted(by_column, reverse=not down):
            members = by_column[c]
            members.sort(key=lambda a: centre(a, feeders[a] if down else fed[a]))
            for i, a in enumerate(members):
                row[a] = i
    return {a: (column[a], row[a]) for a in agents}


def _bezier(points: Sequence[Point], t: float) -> Point:
    """The point at `t` (0 to 1) of the Bézier curve with these control points."""
    pts = list(points)
    while len(pts) > 1:  # de Casteljau: stable for any degree
        pts = [
            ((1 - t) * a[0] + t * b[0], (1 - t) * a[1] + t * b[1])
            for a, b in zip(pts, pts[1:], strict=False)
        ]
    return pts[0]


def _edge_geometry(waypoints: Sequence[Point], *, across: bool, bend: float = 0.0) -> list[Segment]:
    """Cubic pieces through `waypoints` (pixels), each leaving and entering along the
    layer axis, bent `bend` pixels to one side.

    Every waypoint but the ends sits in a gap between the agents of a layer (see
    `control_flow`), and a piece runs from one layer to the next, where no agent is: so
    an edge passes no agent's marker. Leaving and entering along the layer axis (like a
    Sankey link) keeps a curve clear of the agents beside its ends. A self-loop is a
    teardrop above-left of its agent."""
    if len(waypoints) == 2 and waypoints[0] == waypoints[1]:
        x, y = waypoints[0]
        r = NODE_RADIUS_PX
        return [((x, y - r), (x - 8, y - r - 44), (x - r - 44, y - 8), (x - r, y))]
    out: list[Segment] = []
    for a, b in zip(waypoints, waypoints[1:], strict=False):
        if across:
            half = (b[0] - a[0]) / 2
            c1, c2 = (a[0] + half, a[1] + bend), (b[0] - half, b[1] + bend)
        else:
            half = (b[1] - a[1]) / 2
            c1, c2 = (a[0] + bend, a[1] + half), (b[0] + bend, b[1] - half)
        out.append((a, c1, c2, b))
    return out


def _svg_path(segments: Sequence[Segment]) -> str:
    (x0, y0) = segments[0][0]
    parts = [f"M {x0:.1f},{y0:.1f}"]
    for _, c1, c2, b in segments:
        parts.append(f"C {c1[0]:.1f},{c1[1]:.1f} {c2[0]:.1f},{c2[1]:.1f} {b[0]:.1f},{b[1]:.1f}")
    return " ".join(parts)


def _along(segments: Sequence[Segment], share: float) -> Point:
    """The point `share` (0 to 1) of the way along an edge's pieces (by piece, then t)."""
    n = len(segments)
    k = min(int(share * n), n - 1)
    return _bezier(segments[k], share * n - k)


def _text_box(text: str, font_px: float, *, bold: bool = False) -> tuple[float, float]:
    """(width, height) in pixels a label will take, estimated from its text."""
    lines = [line.replace("<b>", "").replace("</b>", "") for line in text.split("<br>")]
    em = CHAR_EM * (1.08 if bold else 1.0)
    width = max((len(html.unescape(line)) for line in lines), default=0) * font_px * em
    return width, len(lines) * font_px * 1.3


Box = tuple[float, float, float, float]
"""x0, y0, x1, y1 in pixels (y downwards)."""


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _place_label(
    segments: Sequence[Segment], size: tuple[float, float], taken: list[Box], bounds: Box
) -> Point:
    """Where an edge's label goes: the point along its path nearest the middle whose box
    overlaps no marker or label already placed; else nudged sideways from there, step by
    step; else the spot that overlaps least."""
    w, h = size[0] + 6, size[1] + 4  # the annotation's padding and a little air

    def box(p: Point) -> Box:
        return (p[0] - w / 2, p[1] - h / 2, p[0] + w / 2, p[1] + h / 2)

    def inside(b: Box) -> bool:
        return b[0] >= bounds[0] and b[1] >= bounds[1] and b[2] <= bounds[2] and b[3] <= bounds[3]

    shares = [0.5]
    for i in range(1, 9):
        shares += [0.5 - 0.045 * i, 0.5 + 0.045 * i]
    starts = [_along(segments, s) for s in shares]
    for p in starts:
        if inside(box(p)) and not any(_overlaps(box(p), t) for t in taken):
            return p
    best, least = starts[0], math.inf
    for p in starts[:5]:
        for step in range(1, 40):
            for dx, dy in ((step * 8, 0), (-step * 8, 0), (0, step * 5), (0, -step * 5)):
                q = (p[0] + dx, p[1] + dy)
                if not inside(box(q)):
                    continue
                hits = sum(_overlaps(box(q), t) for t in taken)
                if hits == 0:
                    return q
                if hits < least:
                    best, least = q, hits
    return best


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


def undeclared_words(undeclared: int, count: int) -> str:
    """ "1 of 33 undeclared": the share of an edge's handoffs over an undeclared route."""
    return f"{int(undeclared or 0):,} of {int(count or 0):,} undeclared"


def _node_marks(edges: pd.DataFrame, names: Sequence[str]) -> tuple[list, list, list]:
    received = _received_share(edges)
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
    return marks, colors, symbols


def control_flow(edges: pd.DataFrame, *, height: int | None = None) -> go.Figure:
    """Agent→agent edges as a layered directed graph that draws cycles and self-loops.

    Each line is an edge across runs: its label is the number of handoffs and the share
    unhealthy, plus "1 of 33 undeclared" when some went over an undeclared route (then
    the line is dashed); its colour is the unhealthy share (green 0 % → red 100 %), its
    width the volume. Delegations (`kind = delegation`, an agent called as a tool) are
    dotted grey and labelled "calls". Each agent carries a health mark: the share of the
    handoffs it received that were unhealthy, as colour and in words.

    The layout is computed in pixels for a plot FLOW_WIDTH_PX wide, so that it can keep
    its promises at 20 agents: agents in layers (`flow_layers`), left to right while the
    layers fit across, top to bottom beyond; every edge routed from layer to layer
    through the gaps between agents (`_edge_geometry`), so no line crosses an agent's
    marker; each label placed along its edge where it overlaps no marker and no other
    label (`_place_label`); the height taken from the number of layers (or of agents in
    the tallest layer), within FLOW_MAX_HEIGHT_PX. tests/dashboard/test_flow_geometry.py
    checks these on the figure.

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
    layers: dict[int, list[str]] = defaultdict(list)
    for a, (c, _) in sorted(where.items(), key=lambda kv: kv[1]):
        layers[c].append(a)
    n_layers = max(layers, default=0) + 1
    tallest = max((len(m) for m in layers.values()), default=1)
    across = n_layers - 1 < WIDE_LAYERS
    names = list(where)
    marks, colors, symbols = _node_marks(edges, names)
    node_text = {a: f"<b>{_plain(a)}</b><br>{m}" for a, m in zip(names, marks, strict=True)}
    node_size = {a: _text_box(t, NODE_FONT_PX, bold=True) for a, t in node_text.items()}

    # Positions in pixels (y downwards): along the layer axis one slot per layer, along
    # the other the agents of a layer spread evenly and centred.
    width = FLOW_WIDTH_PX - FLOW_MARGIN["l"] - FLOW_MARGIN["r"]
    pad = FLOW_PAD_PX
    if across:
        gap: float = ROW_GAP_PX
        plot_h = pad["top"] + (tallest - 1) * gap + pad["bottom"]
        step = (width - 2 * pad["side"]) / max(n_layers, 1)
        pos = {
            a: (
                pad["side"] + step * (c + 0.5),
                pad["top"] + ((tallest - 1) / 2 - (len(layers[c]) - 1) / 2 + r) * gap,
            )
            for a, (c, r) in where.items()
        }
    else:
        gap = max(
            LAYER_GAP_PX[0],
            min(
                LAYER_GAP_PX[1],
                (FLOW_MAX_HEIGHT_PX - pad["top"] - pad["bottom"]) / max(n_layers - 1, 1),
            ),
        )
        plot_h = pad["top"] + (n_layers - 1) * gap + pad["bottom"]
        step = (width - 2 * pad["side"]) / max(tallest, 1)
        pos = {
            a: (
                pad["side"] + step * ((tallest - len(layers[c])) / 2 + r) + step * 0.3,
                pad["top"] + c * gap,
            )
            for a, (c, r) in where.items()
        }
    plot_h = height - FLOW_MARGIN["t"] - FLOW_MARGIN["b"] if height else plot_h

    # What each agent occupies across its layer: its marker and its label (right of it
    # top to bottom, under it left to right). A long edge crosses a layer in the free
    # space between two of these.
    def occupied(a: str) -> tuple[float, float]:
        x, y = pos[a]
        w, h = node_size[a]
        if across:
            return y - NODE_RADIUS_PX, y + NODE_RADIUS_PX + 4 + h
        return x - NODE_RADIUS_PX, x + NODE_RADIUS_PX + 4 + w

    def gaps(c: int) -> list[tuple[float, float]]:
        """The free stretches across layer `c`: between what its agents occupy (merged
        where a wide label reaches the next agent), and beyond its first and last."""
        merged: list[list[float]] = []
        for lo, hi in sorted(occupied(a) for a in layers[c]):
            if merged and lo <= merged[-1][1] + 2 * LANE_PX:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        out = [(merged[0][0] - 6 * LANE_PX, merged[0][0])]
        out += [(a[1], b[0]) for a, b in zip(merged, merged[1:], strict=False)]
        out.append((merged[-1][1], merged[-1][1] + 6 * LANE_PX))
        return out

    lanes: dict[tuple[int, int], int] = defaultdict(int)
    reverse = set(pairs)

    def route(f: str, t: str) -> list[Segment]:
        cf, ct = where[f][0], where[t][0]
        p0, p1 = pos[f], pos[t]
        if f == t:
            return _edge_geometry([p0, p1], across=across)
        points = [p0]
        direction = 1 if ct > cf else -1
        for k in range(cf + direction, ct, direction):
            share = (k - cf) / (ct - cf)
            aim = (p0[1] + (p1[1] - p0[1]) * share) if across else (p0[0] + (p1[0] - p0[0]) * share)
            options = gaps(k)
            i = min(range(len(options)), key=lambda j: abs(sum(options[j]) / 2 - aim))
            lo, hi = options[i]
            lane = lanes[(k, i)]
            lanes[(k, i)] += 1
            # Alternate sides of the gap's centre, so edges through one gap do not overlap,
            # and stay inside it: clear of the agents on either side.
            off = (lo + hi) / 2 + LANE_PX * ((lane + 1) // 2) * (1 if lane % 2 else -1)
            off = min(max(off, lo + LANE_PX), hi - LANE_PX) if hi - lo > 2 * LANE_PX else off
            layer_at = pos[layers[k][0]][0] if across else pos[layers[k][0]][1]
            points.append((layer_at, off) if across else (off, layer_at))
        points.append(p1)
        back = ct < cf
        bend = 0.0
        if back or (t, f) in reverse:
            bend = ROUTE_BEND_PX * (-1 if back else 1)
        return _edge_geometry(points, across=across, bend=bend)

    fig = go.Figure()
    # Shapes and annotations are collected and set once: each `add_shape` or
    # `add_annotation` re-validates the whole layout (3 s for 27 edges, measured).
    shapes: list[dict] = []
    notes: list[dict] = []
    label_x, label_y, hover = [], [], []
    taken: list[Box] = []
    for a in names:  # markers and agent labels first: edge labels make way for them
        x, y = pos[a]
        r = NODE_RADIUS_PX + 2
        taken.append((x - r, y - r, x + r, y + r))
        w, h = node_size[a]
        if across:
            taken.append((x - w / 2, y + NODE_RADIUS_PX + 2, x + w / 2, y + NODE_RADIUS_PX + 4 + h))
        else:
            taken.append((x + NODE_RADIUS_PX + 2, y - h / 2, x + NODE_RADIUS_PX + 4 + w, y + h / 2))
    bounds: Box = (0.0, 0.0, float(width), float(plot_h))
    top = max(int(edges["count"].max()) if len(edges) else 1, 1)
    # Busiest edges first: they get the labels nearest their middle.
    for r in edges.sort_values("count", ascending=False, kind="stable").itertuples():
        segments = route(r.from_agent, r.to_agent)
        delegation = r.kind == sc.KIND_DELEGATION
        undeclared = 0 if delegation else int(r.undeclared or 0)
        color = DELEGATION_COLOR if delegation else style.share_color(r.unhealthy_share, alpha=0.9)
        dash = EDGE_DASH[
            sc.KIND_DELEGATION if delegation else ("undeclared" if undeclared else "declared")
        ]
        line_width = 1.5 + 4.5 * math.log1p(int(r.count)) / math.log1p(top)
        shapes.append(
            {
                "type": "path",
                "path": _svg_path(segments),
                "line": {"color": color, "width": line_width, "dash": dash},
                "layer": "below",
            }
        )
        end = segments[-1]
        before = _bezier(end, 0.8)
        notes.append(
            {
                "x": end[3][0], "y": end[3][1], "ax": before[0], "ay": before[1], "xref": "x",
                "yref": "y", "axref": "x", "ayref": "y", "text": "", "showarrow": True,
                "arrowhead": 2, "arrowsize": 1.1, "arrowwidth": 2, "arrowcolor": color,
                "standoff": NODE_RADIUS_PX + 3,
            }
        )  # fmt: skip
        words = (
            style.count(r.count, "call")
            if delegation
            else f"{int(r.count):,} · {style.percent(r.unhealthy_share)}"
        )
        if undeclared:
            words += " · " + undeclared_words(undeclared, r.count)
        spot = _place_label(segments, _text_box(words, EDGE_FONT_PX), taken, bounds)
        w, h = _text_box(words, EDGE_FONT_PX)
        taken.append(
            (spot[0] - w / 2 - 3, spot[1] - h / 2 - 2, spot[0] + w / 2 + 3, spot[1] + h / 2 + 2)
        )
        notes.append(
            {
                "x": spot[0], "y": spot[1], "text": words, "showarrow": False,
                "font": {"size": EDGE_FONT_PX, "color": "#111827"},
                "bgcolor": "rgba(255,255,255,0.85)", "borderpad": 1,
            }
        )  # fmt: skip
        label_x.append(spot[0])
        label_y.append(spot[1])
        kind_words = (
            "delegation (agent called as a tool)"
            if delegation
            else (
                undeclared_words(undeclared, r.count) + " (a route the sender does not declare)"
                if undeclared
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
    fig.add_scatter(
        x=[pos[a][0] for a in names], y=[pos[a][1] for a in names], mode="markers+text",
        text=[node_text[a] for a in names],
        textposition="bottom center" if across else "middle right",
        textfont={"size": NODE_FONT_PX},
        marker={"size": 2 * NODE_RADIUS_PX, "color": colors, "symbol": symbols,
                "line": {"width": 2, "color": "white"}},
        hovertext=[
            f"{_plain(a)}: {received.get(a, (0, 0))[1]:,} of {received.get(a, (0, 0))[0]:,} "
            "handoffs received unhealthy"
            for a in names
        ],
        hoverinfo="text", showlegend=False,
    )  # fmt: skip
    for name, dash, color in (
        ("declared route", EDGE_DASH["declared"], "#64748b"),
        ("with undeclared handoffs", EDGE_DASH["undeclared"], "#64748b"),
        ("delegation (agent as a tool)", EDGE_DASH[sc.KIND_DELEGATION], DELEGATION_COLOR),
    ):
        fig.add_scatter(
            x=[None], y=[None], mode="lines", name=name,
            line={"dash": dash, "color": color, "width": 3}, hoverinfo="skip",
        )  # fmt: skip
    # Pixel coordinates: x over the plot's width, y downwards over its height, and no
    # autorange, so a coordinate is a pixel at FLOW_WIDTH_PX.
    fig.update_xaxes(visible=False, range=[0, width], fixedrange=True)
    fig.update_yaxes(visible=False, range=[plot_h, 0], fixedrange=True)
    fig.update_layout(
        shapes=shapes, annotations=notes, plot_bgcolor="rgba(0,0,0,0)", hovermode="closest"
    )
    _base(fig, height=int(plot_h + FLOW_MARGIN["t"] + FLOW_MARGIN["b"]))
    fig.update_layout(
        margin=FLOW_MARGIN,
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0},
    )
    return fig


def agent_path(
    agents: Sequence[str],
    *,
    step_verdicts: Sequence[str | None] = (),
    title: str | None = None,
    height: int = 120,
) -> go.Figure:
    """A path of agents left to right, arrows coloured by each handoff's verdict.

    Used for a run's path and for a loop's cycle. An agent's colour and marker come from
    its name (`style.agent_look`), not its place in the path, so it looks the same wherever
    it reappears (the back-edge of a cycle is visible at a glance) and on every run; two
    names that share a look are told apart by the name written above each.
    """
    agents = [str(a) for a in agents]
    looks = [style.agent_look(a) for a in agents]
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
                "color": [color for color, _ in looks],
                "symbol": [symbol for _, symbol in looks],
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
            arrowcolor=style.verdict_color(verdict) if verdict else style.NEUTRAL,
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
    and coloured by the handoff's verdict, which the row's label also says in words.
    `numbers`: each listed handoff's position in the run (default 1, 2, ...).

    The figure has a fixed number of traces whatever the run's size — markers and
    duration bars are one scatter trace per span kind, row separators are gridlines —
    because plotly lays out every shape and annotation on its own, and one per span or
    handoff made big runs take minutes to draw.
    """
    numbers = list(numbers) if numbers is not None else list(range(1, len(handoffs) + 1))
    keys: list[str | None] = [None, *[style.text(h) or None for h in handoffs["handoff_id"]]]
    # The verdict in words on each row: a marker cannot be hatched, so two boundary
    # failures drawn in one shade (route and contract rejected) differ only by these.
    labels = ["run"] + [
        f"#{n} {_plain(style.edge(h.from_agent, h.to_agent))} · {style.verdict_label(h.verdict)}"
        for n, h in zip(numbers, handoffs.itertuples(), strict=True)
    ]
    colors = {None: style.NEUTRAL} | {
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
    df["color"] = [colors.get(k, style.NEUTRAL) for k in span_keys]
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
                name="span duration", hoverinfo="skip", showlegend=False, legendgroup=label,
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
    # Within one colour, the nearest bucket is plain and farther ones patterned: lighter
    # shades (the previous way) came within ΔE 20 of each other and of other meanings.
    # The bucket is also named in the legend and the hover.
    patterns = {"overdue > 1 h": "", "overdue ≤ 1 h": "/", "due in ≤ 15 min": ""}
    patterns |= {"due in ≤ 1 h": "/", "due later": ".", UNCERTAIN_BUCKET: ""}
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
                marker={
                    "color": colors[label],
                    "pattern": style.bar_pattern(patterns[label], colors[label]),
                },
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
    colors = [style.FAILURE_RED if w == this_week else style.NEUTRAL for w in weeks["week"]]
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
    the stack is the week's rejection rate). Each reason is one of the six boundary looks
    (`style.REASON_COLORS`, `style.REASON_PATTERNS`); since the patterns are taken, the
    partial week is marked by a grey band behind its bar and "(partial)" under it."""
    fig = go.Figure()
    known = list(style.REASON_COLORS)
    present = set(by_reason["reason"].dropna())
    weeks = sorted(set(by_reason["week"]))
    ticks = dict(zip(weeks, _week_ticks(weeks, partial_week), strict=True))
    for reason in [r for r in known if r in present] + sorted(present - set(known)):
        rows = by_reason[by_reason["reason"] == reason]
        color = style.REASON_COLORS.get(reason, style.UNKNOWN_COLOR)
        fig.add_bar(
            x=[ticks[w] for w in rows["week"]],
            y=pd.to_numeric(rows["rate"], errors="coerce").astype(float) * 100,
            customdata=list(rows["count"]),
            name=style.reason_label(reason),
            marker={
                "color": color,
                "pattern": style.bar_pattern(style.REASON_PATTERNS.get(reason, ""), color),
            },
            hovertemplate="%{x}: %{y:.1f} % of handoffs (%{customdata} rejections)<extra>%{fullData.name}</extra>",
        )
    fig.update_layout(barmode="stack")
    if partial_week in ticks:
        at = weeks.index(partial_week)  # a category axis places week i at x = i
        fig.add_vrect(
            x0=at - 0.5, x1=at + 0.5, fillcolor="#e5e7eb", opacity=0.6, line_width=0,
            layer="below",
        )  # fmt: skip
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
            colorscale=[[0, "#f8fafc"], [0.001, "#fde2e2"], [1, style.FAILURE_RED]],
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
        (last_week, style.NEUTRAL, names[1]),
        (this_week, style.FAILURE_RED, names[0]),
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
