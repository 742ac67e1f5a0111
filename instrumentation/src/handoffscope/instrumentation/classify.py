"""The verdict of one handoff from its merged evidence, and loop detection across a run.

The public names of the `verdicts` package (where the rules live, as data:
`verdicts/rules.py`), importable from here as they always were.
"""

from __future__ import annotations

from .verdicts.evidence import DEFAULT_GRACE_SECONDS, Classification, HandoffEvidence, worst
from .verdicts.loops import HandoffStep, LoopReport, find_loops
from .verdicts.rules import boundaries, classify
from .verdicts.waits import classify_wait

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "Classification",
    "HandoffEvidence",
    "HandoffStep",
    "LoopReport",
    "boundaries",
    "classify",
    "classify_wait",
    "find_loops",
    "worst",
]
