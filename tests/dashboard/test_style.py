"""Words the dashboard shows for numbers (style.py): what a person would say."""

from __future__ import annotations

import pytest

from handoffscope.dashboard import style


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(0, "0 s"), (0.0004, "< 1 ms"), (0.012, "12 ms"), (0.9996, "1 s"), (42, "42 s"),
     (185, "3 min 5 s"), (7800, "2 h 10 min")],
)  # fmt: skip
def test_durations_read_as_a_person_says_them(seconds: float, words: str) -> None:
    # A scripted run lasts milliseconds: "0 s" on every run read as a broken duration.
    assert style.duration(seconds) == words
