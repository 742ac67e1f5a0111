"""The arrival rate the loader and the judge consult before gathering work (arrivals.py)."""

from __future__ import annotations

from handoffscope.collector.arrivals import WINDOW_S, RecentArrivals


def test_only_the_last_window_counts() -> None:
    now = [100.0]
    arrivals = RecentArrivals(clock=lambda: now[0])
    assert arrivals.per_second() == 0
    arrivals.add(300)
    now[0] += WINDOW_S / 2
    arrivals.add(200)
    assert arrivals.per_second() == 500
    now[0] += WINDOW_S / 2 + 0.01  # the first 300 are older than the window now
    assert arrivals.per_second() == 200
    now[0] += WINDOW_S
    assert arrivals.per_second() == 0
    arrivals.add(7)
    assert arrivals.per_second() == 7
