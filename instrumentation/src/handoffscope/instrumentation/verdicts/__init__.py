"""What a verdict is, in one place (docs/architecture.md, Verdicts).

- `evidence.py` — what a handoff is judged from (`HandoffEvidence`) and what the judgment
  says (`Classification`); `worst` of several verdicts.
- `rules.py` — the ladder as data (`RULES`, in precedence order): `classify` is the first
  rule a handoff fails, `boundaries` walks the same list.
- `waits.py` — the five facts of a human wait, once, and `classify_wait`.
- `loops.py` — loops across a run's handoffs (`find_loops`).
- `continuity.py` — a run's continuity in its conversation (not a verdict: a fact).
- `timeline.py` — verdicts over time: the flips a time-based rule makes, and the worst
  of a run's timelines.

The names, words and next steps of each verdict are one table in `semconv`
(`VERDICT_TABLE`). Pure functions, no I/O: the shims, the collector's engine and its query
API all judge through here, and `handoffscope.instrumentation.classify` re-exports the
public part.
"""

from .continuity import continuity
from .evidence import DEFAULT_GRACE_SECONDS, Classification, HandoffEvidence, worst
from .loops import HandoffStep, LoopReport, find_loops
from .rules import RULES, Rule, boundaries, classify
from .timeline import Timeline, handoff_timeline, thresholds, wait_timeline, worst_timeline
from .waits import WAIT_FACTS, classify_wait, wait_missing

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "RULES",
    "WAIT_FACTS",
    "Classification",
    "HandoffEvidence",
    "HandoffStep",
    "LoopReport",
    "Rule",
    "Timeline",
    "boundaries",
    "classify",
    "classify_wait",
    "continuity",
    "find_loops",
    "handoff_timeline",
    "thresholds",
    "wait_missing",
    "wait_timeline",
    "worst",
    "worst_timeline",
]
