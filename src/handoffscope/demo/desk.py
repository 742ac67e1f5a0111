"""The support desk both framework demos run (openai_scenarios, langgraph_scenarios): its
work tools, model, approvers, verifiers and the deadline windows of its approvals.

The tools are framework-free: the OpenAI Agents SDK scenarios wrap them with
`function_tool`, the LangGraph ones with `tool` (both read the name, signature and
docstring), so the two desks do the same work. The approval-gated refund is not here: each
framework asks for approval its own way.
"""

from __future__ import annotations

PENDING_WINDOW_S = (3600.0, 4 * 3600.0)
"""Deadline of an approval left pending: hours ahead, so it stays `waiting_on_approval`."""
OVERDUE_WINDOW_S = (5.0, 30.0)
"""Deadline of an approval nobody will decide: close enough that the live board shows it
turn `approval_overdue` while the newcomer watches."""
DECIDED_WINDOW_S = (600.0, 3600.0)
"""Deadline of an approval that gets decided (before it, within the same call)."""

DEMO_MODEL = "gpt-4.1-mini"
"""The model the desk's agents report their calls under (the OpenAI Agents SDK scenarios'
scripted model, the backfilled history): one the collector's price table knows, so the
board and the weekly review show dollars, not "not priced"."""

APPROVERS = ("finance-lead", "billing-lead", "ops-lead")
VERIFIERS = {
    "billing": "invoice_checked",
    "refunds": "refund_recorded",
    "escalation": "ticket_opened",
}
"""The app's verifier for the work each final agent does."""


def lookup_invoice(invoice_id: str) -> str:
    """Find an invoice and its line items."""
    return f"invoice {invoice_id}: 2 lines, one charged twice"


def create_refund(order_id: str, amount_eur: float) -> str:
    """Refund an order, up to the self-service limit."""
    return f"refunded {amount_eur} EUR on {order_id}"


def open_ticket(priority: str) -> str:
    """Open a ticket for the on-call team."""
    return f"ticket opened, priority {priority}"
