"""The weekly review's figures: rejection rates per ISO week, by reason, edge and receiving
agent (`weekly_body`, the JSON of GET /api/v1/review/weekly), and the same figures as CSV
(`weekly_csv`, `?format=csv`), with every cell a spreadsheet would run as a formula made
inert (`csv_cell`).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from collections import defaultdict
from typing import Any


def rate(part: int, whole: int) -> float | None:
    """A share rounded to six places; None when there is nothing to divide."""
    return round(part / whole, 6) if whole else None


def week_label(d: dt.date) -> str:
    year, week, _ = d.isocalendar()
    return f"{year}-W{week:02d}"


def weekly_body(
    rows: list[dict[str, Any]], labels: list[str], *, this_week_days: float = 7.0
) -> dict[str, Any]:
    """The weekly review from rollup rows (week, from_agent, to_agent, reason, handoffs).

    The last label is the current week, `partial` with `days` = `this_week_days` (the
    days elapsed since its Monday): a reader must not weigh its rate like a whole week's.
    Every other week is whole (`days` 7)."""
    total: dict[str, int] = dict.fromkeys(labels, 0)
    rejected: dict[str, int] = dict.fromkeys(labels, 0)
    by_reason: dict[tuple, int] = defaultdict(int)
    by_edge: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    by_agent: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    by_edge_reason: dict[tuple, int] = defaultdict(int)
    for r in rows:
        week = r["week"]
        if week not in total:
            continue
        n = int(r["handoffs"])
        rej = n if r["reason"] else 0
        total[week] += n
        rejected[week] += rej
        if r["reason"]:
            by_reason[(week, r["reason"])] += n
            by_edge_reason[(week, r["from_agent"] or None, r["to_agent"] or None, r["reason"])] += n
        edge = by_edge[(week, r["from_agent"] or None, r["to_agent"] or None)]
        edge[0] += n
        edge[1] += rej
        agent = by_agent[(week, r["to_agent"] or None)]
        agent[0] += n
        agent[1] += rej
    order = {w: i for i, w in enumerate(labels)}

    def key(item):
        return (
            order[item[0][0]],
            -item[1][1] if isinstance(item[1], list) else -item[1],
            str(item[0][1:]),
        )

    return {
        "this_week": labels[-1],
        "last_week": labels[-2] if len(labels) > 1 else None,
        "weeks": [
            {
                "week": w,
                "handoffs": total[w],
                "rejections": rejected[w],
                "rate": rate(rejected[w], total[w]),
                "partial": w == labels[-1],
                "days": round(min(max(this_week_days, 0.0), 7.0), 3) if w == labels[-1] else 7.0,
            }
            for w in labels
        ],
        "by_reason": [
            {"week": w, "reason": reason, "count": n, "rate": rate(n, total[w])}
            for (w, reason), n in sorted(by_reason.items(), key=key)
        ],
        "by_edge": [
            {
                "week": w,
                "from_agent": f,
                "to_agent": t,
                "handoffs": n,
                "rejections": rej,
                "rate": rate(rej, n),
            }
            for (w, f, t), (n, rej) in sorted(by_edge.items(), key=key)
        ],
        "by_agent": [
            {"week": w, "agent": a, "handoffs": n, "rejections": rej, "rate": rate(rej, n)}
            for (w, a), (n, rej) in sorted(by_agent.items(), key=key)
        ],
        # Edge × reason: of an edge's handoffs that week, the share refused for each reason.
        "by_edge_reason": [
            {
                "week": w,
                "from_agent": f,
                "to_agent": t,
                "reason": reason,
                "count": n,
                "rate": rate(n, by_edge[(w, f, t)][0]),
            }
            for (w, f, t, reason), n in sorted(
                by_edge_reason.items(), key=lambda kv: (order[kv[0][0]], -kv[1], str(kv[0][1:]))
            )
        ],
    }


def weekly_continuity(rows: list[dict[str, Any]], labels: list[str]) -> list[dict[str, Any]]:
    """Per week (of first seen) and service: the later turns of conversations by
    continuity, from continuity_weekly.sql's counts per (day, service, continuity); a
    conversation's first run is no turn of this."""
    counts: dict[tuple, dict[str, int]] = {}
    weeks = set(labels)
    epoch = dt.date(1970, 1, 1)
    for r in rows:
        week = week_label(epoch + dt.timedelta(days=r["day_ns"] // 86_400_000_000_000))
        if week not in weeks:
            continue
        c = counts.setdefault((week, r["service"]), defaultdict(int))
        c["turns"] += int(r["turns"])
        c[r["continuity"] or "unknown"] += int(r["turns"])
    order = {w: i for i, w in enumerate(labels)}
    out = []
    for (week, svc), c in sorted(
        counts.items(), key=lambda kv: (order[kv[0][0]], kv[0][1] is None, kv[0][1] or "")
    ):
        n = c["turns"]
        out.append(
            {
                "week": week,
                "service": svc,
                "turns": n,
                "continued": c["continued"],
                "rerouted": c["rerouted"],
                "diverted": c["diverted"],
                "unknown": c["unknown"],
                "rerouted_rate": rate(c["rerouted"], n),
                "diverted_rate": rate(c["diverted"], n),
            }
        )
    return out


CSV_COLUMNS = ("week", "dimension", "key", "handoffs", "rejections", "rate")


CSV_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""A spreadsheet reads a cell beginning with one of these as a formula (OWASP, "CSV
Injection"): an agent named `=HYPERLINK("http://…")` would become a live link, `@SUM(…)`
a computation, in the reviewer's spreadsheet."""


def csv_cell(value: object) -> object:
    """`value`, with a leading `'` when it is text a spreadsheet would run as a formula.

    The quote is what spreadsheets themselves use to mark a cell as text; it is visible,
    which is right: the name really does begin with `=`. Numbers are written as numbers
    (this file's counts and rates are never negative)."""
    if isinstance(value, str) and value.startswith(CSV_FORMULA_START):
        return "'" + value
    return value


def weekly_csv(body: dict[str, Any]) -> str:
    """One row per (week, dimension, key): dimension is total, reason, edge or agent.

    Every text cell goes through `csv_cell`; an edge with an unknown agent writes it as
    `?` (as the dashboard does), so `?->billing`, not a cell starting with `-`."""
    out = io.StringIO()
    # CRLF, as RFC 4180 has it; it also makes the writer quote a cell holding a bare CR.
    writer = csv.writer(out, lineterminator="\r\n")

    def write(row: tuple) -> None:
        writer.writerow([csv_cell(v) for v in row])

    write(CSV_COLUMNS)
    totals = {r["week"]: r["handoffs"] for r in body["weeks"]}

    def shown(v):
        return "" if v is None else f"{v:.6f}"

    for r in body["weeks"]:
        write((r["week"], "total", "", r["handoffs"], r["rejections"], shown(r["rate"])))
    for r in body["by_reason"]:
        write((r["week"], "reason", r["reason"], totals[r["week"]], r["count"], shown(r["rate"])))
    for r in body["by_edge"]:
        edge = f"{r['from_agent'] or '?'}->{r['to_agent'] or '?'}"
        write((r["week"], "edge", edge, r["handoffs"], r["rejections"], shown(r["rate"])))
    for r in body["by_agent"]:
        write(
            (r["week"], "agent", r["agent"] or "", r["handoffs"], r["rejections"], shown(r["rate"]))
        )
    return out.getvalue()
