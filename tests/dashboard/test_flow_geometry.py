"""The control-flow graph at 20 agents, measured on the figure: what an operator would see.

`charts.control_flow` lays the graph out in pixels at `charts.FLOW_WIDTH_PX` (a wider page
only stretches it), so these tests read the figure plotly is handed — each edge's SVG
path, each label's text, font and place, the agents' markers — and check it as a person
looking at the picture would: no line runs through an agent it does not connect, no two
labels overlap (their boxes estimated from text length × font size, as the browser would
roughly draw them), an edge with undeclared handoffs says how many of how many and is
dashed, and the height follows the layers without running away.

The edge set is a realistic 20-agent system: an intake in front of a supervisor with three
teams (research with a fact-check cycle, billing with an approval, support with a
tier-1/tier-2 ping-pong and a self-loop), a three-agent swarm that hands work around, team
leads returning to the supervisor, an undeclared route (1 of 33) and a delegation.
"""

from __future__ import annotations

import itertools
import math
import re

import pandas as pd
import pytest

from handoffscope.dashboard import charts
from handoffscope.instrumentation import semconv as sc

# (from, to, handoffs, unhealthy, undeclared, kind)
EDGES_20 = [
    ("intake", "supervisor", 120, 2, 0, sc.KIND_HANDOFF),
    ("supervisor", "research_lead", 40, 1, 0, sc.KIND_HANDOFF),
    ("supervisor", "billing_lead", 45, 3, 0, sc.KIND_HANDOFF),
    ("supervisor", "support_lead", 30, 0, 0, sc.KIND_HANDOFF),
    ("supervisor", "flight_agent", 12, 0, 0, sc.KIND_HANDOFF),
    ("research_lead", "web_search", 38, 0, 0, sc.KIND_HANDOFF),
    ("research_lead", "summarizer", 9, 0, 0, sc.KIND_HANDOFF),
    ("web_search", "summarizer", 36, 2, 0, sc.KIND_HANDOFF),
    ("summarizer", "fact_checker", 35, 0, 0, sc.KIND_HANDOFF),
    ("fact_checker", "research_lead", 11, 6, 0, sc.KIND_HANDOFF),  # the research cycle
    ("research_lead", "supervisor", 30, 0, 0, sc.KIND_HANDOFF),  # a lead returns its work
    ("billing_lead", "invoices", 20, 0, 0, sc.KIND_HANDOFF),
    ("billing_lead", "refunds", 15, 4, 0, sc.KIND_HANDOFF),
    ("billing_lead", "payments", 10, 0, 0, sc.KIND_HANDOFF),
    ("refunds", "approver", 9, 2, 0, sc.KIND_HANDOFF),
    ("approver", "notifier", 7, 0, 0, sc.KIND_HANDOFF),
    ("payments", "notifier", 10, 0, 0, sc.KIND_HANDOFF),
    ("billing_lead", "supervisor", 25, 0, 0, sc.KIND_HANDOFF),
    ("support_lead", "tier1", 28, 0, 0, sc.KIND_HANDOFF),
    ("tier1", "tier2", 14, 1, 0, sc.KIND_HANDOFF),
    ("tier2", "tier1", 6, 6, 0, sc.KIND_HANDOFF),  # ping-pong
    ("tier2", "escalation", 33, 3, 1, sc.KIND_HANDOFF),  # 1 of 33 undeclared
    ("escalation", "legal", 4, 4, 4, sc.KIND_HANDOFF),  # all undeclared
    ("escalation", "notifier", 20, 0, 0, sc.KIND_HANDOFF),
    ("support_lead", "support_lead", 3, 3, 0, sc.KIND_HANDOFF),  # a self-loop
    ("flight_agent", "hotel_agent", 10, 0, 0, sc.KIND_HANDOFF),
    ("hotel_agent", "flight_agent", 4, 1, 0, sc.KIND_HANDOFF),
    ("hotel_agent", "car_agent", 8, 0, 0, sc.KIND_HANDOFF),
    ("car_agent", "flight_agent", 3, 3, 0, sc.KIND_HANDOFF),  # the swarm's cycle
    ("car_agent", "supervisor", 5, 0, 0, sc.KIND_HANDOFF),
    ("billing_lead", "summarizer", 6, 0, 0, sc.KIND_DELEGATION),
]
AGENTS_20 = sorted({a for f, t, *_ in EDGES_20 for a in (f, t)})

EDGE_LABEL_EM = 0.6
"""Estimated glyph width in ems for the test's own label boxes (Inter averages ~0.55)."""
LINE_EM = 1.2


def _frame(rows) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "kind": kind,
                "from_agent": f,
                "to_agent": t,
                "count": n,
                "unhealthy": u,
                "unhealthy_share": u / n,
                "undeclared": und,
                "verdicts": {},
                "runs": [],
            }
            for f, t, n, u, und, kind in rows
        ]
    )


# A small system, drawn left to right: a ping-pong, a self-loop, an undeclared route.
EDGES_SMALL = [
    ("intake", "triage", 50, 0, 0, sc.KIND_HANDOFF),
    ("triage", "billing", 30, 3, 0, sc.KIND_HANDOFF),
    ("billing", "triage", 12, 12, 0, sc.KIND_HANDOFF),
    ("triage", "triage", 2, 2, 0, sc.KIND_HANDOFF),
    ("triage", "refunds", 5, 5, 5, sc.KIND_HANDOFF),
    ("billing", "approver", 8, 1, 0, sc.KIND_HANDOFF),
    ("intake", "approver", 1, 0, 0, sc.KIND_HANDOFF),
]


@pytest.fixture(scope="module")
def fig20():
    assert len(AGENTS_20) == 20
    return charts.control_flow(_frame(EDGES_20))


@pytest.fixture(scope="module", params=["20 agents, top to bottom", "6 agents, left to right"])
def drawn(request, fig20):
    """Each graph, with the number of edges it must draw."""
    if request.param.startswith("20"):
        assert _node_trace(fig20).textposition == "middle right"  # top to bottom
        return fig20, EDGES_20
    fig = charts.control_flow(_frame(EDGES_SMALL))
    assert _node_trace(fig).textposition == "bottom center"  # left to right
    return fig, EDGES_SMALL


def _node_trace(fig):
    return next(t for t in fig.data if t.mode == "markers+text")


def _scale_is_pixels(fig) -> None:
    """The axes map one unit to one pixel at FLOW_WIDTH_PX, y downwards: the measures
    below are in pixels."""
    m = fig.layout.margin
    assert list(fig.layout.xaxis.range) == [0, charts.FLOW_WIDTH_PX - m.l - m.r]
    assert list(fig.layout.yaxis.range) == [fig.layout.height - m.t - m.b, 0]


def _nodes(fig) -> dict[str, tuple[float, float]]:
    trace = _node_trace(fig)
    names = [re.sub(r"<[^>]+>", "", s.split("<br>")[0]) for s in trace.text]
    return dict(zip(names, zip(trace.x, trace.y, strict=True), strict=True))


def _pieces(d: str) -> list[list[tuple[float, float]]]:
    """An SVG path of `M x,y C x,y x,y x,y …` as its cubic pieces' control points."""
    nums = [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", d)]
    pts = list(zip(nums[::2], nums[1::2], strict=True))
    return [pts[i : i + 4] for i in range(0, len(pts) - 1, 3)]


def _cubic(p, t: float) -> tuple[float, float]:
    a, b, c, d = p
    u = 1 - t
    return (
        u**3 * a[0] + 3 * u * u * t * b[0] + 3 * u * t * t * c[0] + t**3 * d[0],
        u**3 * a[1] + 3 * u * u * t * b[1] + 3 * u * t * t * c[1] + t**3 * d[1],
    )


def _label_boxes(fig) -> list[tuple[str, tuple[float, float, float, float]]]:
    """Every text the graph shows, with the box it takes: edge labels (annotations, centred)
    and agent labels (right of the marker top to bottom, under it left to right)."""
    boxes = []
    for a in fig.layout.annotations:
        if not a.text:
            continue
        w = len(a.text) * a.font.size * EDGE_LABEL_EM
        h = a.font.size * LINE_EM
        boxes.append((a.text, (a.x - w / 2, a.y - h / 2, a.x + w / 2, a.y + h / 2)))
    trace = _node_trace(fig)
    size = trace.textfont.size
    r = trace.marker.size / 2
    for text, x, y in zip(trace.text, trace.x, trace.y, strict=True):
        lines = [re.sub(r"<[^>]+>", "", s) for s in text.split("<br>")]
        w = max(len(s) for s in lines) * size * EDGE_LABEL_EM
        h = len(lines) * size * LINE_EM
        if trace.textposition == "middle right":
            box = (x + r, y - h / 2, x + r + w, y + h / 2)
        else:
            box = (x - w / 2, y + r, x + w / 2, y + r + h)
        boxes.append((lines[0], box))
    return boxes


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_no_edge_passes_through_an_agent_it_does_not_connect(drawn) -> None:
    fig, rows = drawn
    _scale_is_pixels(fig)
    nodes = _nodes(fig)
    assert set(nodes) == {a for f, t, *_ in rows for a in (f, t)}
    radius = charts.NODE_RADIUS_PX
    paths = [s.path for s in fig.layout.shapes]
    assert len(paths) == len(rows)
    for d in paths:
        pieces = _pieces(d)
        start, end = pieces[0][0], pieces[-1][-1]
        ends = {
            n
            for n, p in nodes.items()
            if math.dist(p, start) <= radius + 1 or math.dist(p, end) <= radius + 1
        }
        assert ends, f"an edge that starts or ends at no agent: {d}"
        for piece in pieces:
            for i in range(41):
                x, y = _cubic(piece, i / 40)
                for n, p in nodes.items():
                    if n not in ends:
                        # the marker, plus half a thick line
                        assert math.dist(p, (x, y)) > radius + 2, (n, d)


def test_no_two_labels_overlap(drawn) -> None:
    fig, rows = drawn
    boxes = _label_boxes(fig)
    edge_labels = [t for t, _ in boxes if "·" in t or t.endswith("calls")]
    assert len(edge_labels) == len(rows)
    for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
        assert not _overlap(a, b), (ta, a, tb, b)
    # and no label sits on an agent's marker
    r = charts.NODE_RADIUS_PX
    for n, (x, y) in _nodes(fig).items():
        marker = (x - r, y - r, x + r, y + r)
        for t, b in boxes:
            if not t.startswith(n):
                assert not _overlap(marker, b), (n, t)


def test_undeclared_share_is_on_the_edge_and_the_edge_is_dashed(fig20) -> None:
    texts = [a.text for a in fig20.layout.annotations if a.text]
    assert "33 · 9 % · 1 of 33 undeclared" in texts
    assert "4 · 100 % · 4 of 4 undeclared" in texts
    assert sum("undeclared" in t for t in texts) == 2
    dashed = [s for s in fig20.layout.shapes if s.line.dash == charts.EDGE_DASH["undeclared"]]
    assert len(dashed) == 2
    hovers = next(t for t in fig20.data if t.mode == "markers" and t.hovertext).hovertext
    assert any("tier2 → escalation" in h and "1 of 33 undeclared" in h for h in hovers)


def _chain(n: int) -> pd.DataFrame:
    agents = [f"agent_{i:02d}" for i in range(n)]
    return _frame([(a, b, 5, 0, 0, sc.KIND_HANDOFF) for a, b in itertools.pairwise(agents)])


def test_height_follows_the_layers_within_a_bound(fig20) -> None:
    sizes = (8, 10, 12, 14, 20, 26)
    heights = [charts.control_flow(_chain(n)).layout.height for n in sizes]
    bound = charts.FLOW_MAX_HEIGHT_PX + 100  # the plot, its margins and the legend
    assert heights == sorted(heights), heights
    # Taller with every layer while it fits; then layers draw closer, not taller.
    grows = [h for h in heights if h < bound - 100]
    assert len(set(grows)) == len(grows) >= 3, heights
    assert all(h <= bound for h in heights), heights
    # 20 agents in 7 layers: taller than the old fixed 360 px, and within the bound.
    assert 700 <= fig20.layout.height <= bound
