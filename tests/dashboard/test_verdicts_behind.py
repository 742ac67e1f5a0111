"""Every page says when verdicts trail the spans received (issue 14: the judge runs behind
the acknowledgement, and a board that silently shows stale verdicts misleads)."""

from __future__ import annotations

from handoffscope.dashboard import layout


def test_no_notice_while_the_judge_keeps_up() -> None:
    for lag in (None, 0.0, 0.4, layout.VERDICTS_BEHIND_S):
        assert layout.verdicts_behind(lag) is None, lag


def test_the_notice_says_how_far_behind() -> None:
    text = layout.verdicts_behind(12.0)
    assert text is not None and text.startswith("Verdicts 12 s behind")
    text = layout.verdicts_behind(185.0)
    assert text is not None and text.startswith("Verdicts 3 min 5 s behind")
