"""The query API's parameter parsing, and the HTML/CSV rendering helpers, as units.

Pure functions: the end-to-end behaviour (400 answers through the real collector) is in
test_api.py; here are the edge cases a schema fuzzer would find first.
"""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest

from handoffscope.collector.query.params import (
    INT64_MAX,
    INT64_MIN,
    BadParam,
    parse_bool,
    parse_int,
    parse_service,
    parse_time,
    parse_verdict,
)
from handoffscope.collector.query.weekly import weekly_body, weekly_csv
from handoffscope.collector.timefmt import iso
from handoffscope.instrumentation import semconv as sc

S = 10**9


def epoch_ns(*args: int, micro: int = 0) -> int:
    d = dt.datetime(*args, tzinfo=dt.UTC) - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return (d.days * 86_400 + d.seconds) * S + micro * 1000


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-11-30T12:00:00Z", epoch_ns(2026, 11, 30, 12)),
        ("2026-11-30t12:00:00z", epoch_ns(2026, 11, 30, 12)),
        ("2026-11-30 12:00:00Z", epoch_ns(2026, 11, 30, 12)),
        ("2026-11-30T12:00:00.123456789Z", epoch_ns(2026, 11, 30, 12) + 123_456_789),
        ("2026-11-30T12:00:00.5+02:00", epoch_ns(2026, 11, 30, 10) + S // 2),
        ("2026-11-30T12:00:00-01:30", epoch_ns(2026, 11, 30, 13, 30)),
        ("2026-11-30T12:00", epoch_ns(2026, 11, 30, 12)),
        ("2026-11-30", epoch_ns(2026, 11, 30)),
        ("2024-02-29T00:00:00Z", epoch_ns(2024, 2, 29)),
        ("2016-12-31T23:59:60Z", epoch_ns(2017, 1, 1)),  # a leap second is one second later
        ("1969-12-31T23:59:59Z", -S),
        ("1796036039", 1796036039 * S),
        ("1796036039.25", 1796036039 * S + S // 4),
        ("0", 0),
    ],
)
def test_times_parse_to_epoch_ns(raw, expected):
    assert parse_time("since", raw) == expected


def test_times_far_outside_int64_are_clamped():
    assert parse_time("until", "9999-12-31T23:59:59Z") == INT64_MAX  # ns overflow in 2262
    assert parse_time("until", "999999999999.999999999") == INT64_MAX
    assert parse_time("since", "0000-01-01T00:00:00Z") == INT64_MIN
    assert parse_time("since", None) is None


@pytest.mark.parametrize(
    "raw",
    [
        "",
        "yesterday",
        "2026-13-01",
        "2026-02-30T00:00:00Z",
        "2023-02-29",
        "2026-11-30T24:00:00Z",
        "2026-11-30T12:60:00Z",
        "2026-11-30T12:00:00+24:00",
        "1e9",
        "-5",
        "nan",
        "12:00",
    ],
)
def test_bad_times_are_refused(raw):
    with pytest.raises(BadParam, match="since"):
        parse_time("since", raw)


def test_other_parameters():
    assert parse_int("limit", None, 100, 1, 1000) == 100
    assert parse_int("limit", "+7", 100, 1, 1000) == 7
    for bad in ("", "0", "1001", "1.5", "ten", " 5"):
        with pytest.raises(BadParam):
            parse_int("limit", bad, 100, 1, 1000)
    assert parse_verdict(None) is None and parse_verdict(sc.LOOP) == sc.LOOP
    for bad in ("", "LOOP", "ok"):
        with pytest.raises(BadParam):
            parse_verdict(bad)
    assert parse_bool("unhealthy", "true") is True and parse_bool("unhealthy", None) is False
    for bad in ("", "1", "True", "yes"):
        with pytest.raises(BadParam):
            parse_bool("unhealthy", bad)
    assert parse_service("") is None and parse_service("billing app é") == "billing app é"
    for bad in ("a\x00b", "tab\there", "x" * 257):
        with pytest.raises(BadParam):
            parse_service(bad)


def test_iso_times_are_utc_milliseconds():
    assert iso(epoch_ns(2026, 11, 30, 12) + 123_456_789) == "2026-11-30T12:00:00.123Z"
    assert iso(-1) == "1969-12-31T23:59:59.999Z"
    assert iso(None) is None


def test_weekly_rollup_folds_into_weeks_and_csv():
    rows = [
        {"week": "2026-W48", "from_agent": "a", "to_agent": "b", "reason": "", "handoffs": 8},
        {"week": "2026-W48", "from_agent": "a", "to_agent": "b", "reason": "route", "handoffs": 2},
        {"week": "2026-W49", "from_agent": "a", "to_agent": "c", "reason": "stale", "handoffs": 1},
        {"week": "2026-W49", "from_agent": "", "to_agent": "c", "reason": "", "handoffs": 3},
        {
            "week": "2026-W40",
            "from_agent": "a",
            "to_agent": "b",
            "reason": "",
            "handoffs": 99,
        },  # out of range
    ]
    body = weekly_body(rows, ["2026-W47", "2026-W48", "2026-W49"], this_week_days=2.5)
    assert body["this_week"] == "2026-W49" and body["last_week"] == "2026-W48"
    whole = {"partial": False, "days": 7.0}
    assert body["weeks"] == [
        {"week": "2026-W47", "handoffs": 0, "rejections": 0, "rate": None, **whole},
        {"week": "2026-W48", "handoffs": 10, "rejections": 2, "rate": 0.2, **whole},
        {"week": "2026-W49", "handoffs": 4, "rejections": 1, "rate": 0.25, "partial": True,
         "days": 2.5},
    ]  # fmt: skip
    assert body["by_reason"] == [
        {"week": "2026-W48", "reason": "route", "count": 2, "rate": 0.2},
        {"week": "2026-W49", "reason": "stale", "count": 1, "rate": 0.25},
    ]
    assert {
        (r["week"], r["from_agent"], r["to_agent"]): r["rejections"] for r in body["by_edge"]
    } == {
        ("2026-W48", "a", "b"): 2,
        ("2026-W49", "a", "c"): 1,
        ("2026-W49", None, "c"): 0,
    }
    assert {
        (r["week"], r["agent"]): (r["handoffs"], r["rejections"]) for r in body["by_agent"]
    } == {
        ("2026-W48", "b"): (10, 2),
        ("2026-W49", "c"): (4, 1),
    }
    # Edge × reason: the share of that edge's handoffs refused for that reason.
    assert body["by_edge_reason"] == [
        {"week": "2026-W48", "from_agent": "a", "to_agent": "b", "reason": "route", "count": 2,
         "rate": 0.2},
        {"week": "2026-W49", "from_agent": "a", "to_agent": "c", "reason": "stale", "count": 1,
         "rate": 1.0},
    ]  # fmt: skip
    lines = weekly_csv(body).splitlines()
    assert lines[0] == "week,dimension,key,handoffs,rejections,rate"
    assert "2026-W48,reason,route,10,2,0.200000" in lines
    assert "2026-W49,edge,?->c,3,0,0.000000" in lines
    assert "2026-W47,total,,0,0," in lines


FORMULAS = [
    '=HYPERLINK("http://127.0.0.1/leak","open")',
    "+1+cmd|' /C calc'!A0",
    "-2+3",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]


def test_weekly_csv_neutralises_cells_a_spreadsheet_would_run() -> None:
    body = {
        "weeks": [{"week": "2026-W49", "handoffs": 6, "rejections": 6, "rate": 1.0}],
        "by_reason": [{"week": "2026-W49", "reason": "route", "count": 6, "rate": 1.0}],
        "by_edge": [
            {
                "week": "2026-W49",
                "from_agent": f,
                "to_agent": "billing",
                "handoffs": 1,
                "rejections": 1,
                "rate": 1.0,
            }
            for f in FORMULAS
        ],
        "by_agent": [
            {"week": "2026-W49", "agent": f, "handoffs": 1, "rejections": 1, "rate": 1.0}
            for f in FORMULAS
        ],
    }
    rows = list(csv.reader(io.StringIO(weekly_csv(body), newline="")))
    agents = [r[2] for r in rows if r[1] == "agent"]
    edges = [r[2] for r in rows if r[1] == "edge"]
    assert agents == ["'" + f for f in FORMULAS]
    assert edges == ["'" + f + "->billing" for f in FORMULAS]
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), row
    # Plain names and numbers are written as they are.
    assert ["2026-W49", "reason", "route", "6", "6", "1.000000"] in rows
