"""handoffscope instrumentation: content-free evidence of agent-to-agent handoffs.

    from handoffscope.instrumentation import configure, HandoffRecorder, fingerprint, validate_contract

Framework adapters are imported from their own modules, which import the framework
lazily: `handoffscope.instrumentation.openai_agents`, `handoffscope.instrumentation.langgraph`.
"""

from .classify import Classification, HandoffEvidence, classify, find_loops
from .configure import configure
from .contract import ContractCheck, validate_contract
from .fingerprint import fingerprint
from .recorder import HandoffRecorder
from .stats import stats

__all__ = [
    "Classification",
    "ContractCheck",
    "HandoffEvidence",
    "HandoffRecorder",
    "classify",
    "configure",
    "find_loops",
    "fingerprint",
    "stats",
    "validate_contract",
]
