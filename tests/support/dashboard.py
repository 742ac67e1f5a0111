"""Where the dashboard app is and which pages it has (no Streamlit import: tests that
need no dashboard still collect where it is not installed)."""

from __future__ import annotations

from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "dashboard/src/handoffscope/dashboard/app.py"
PAGES = (
    "live",
    "control_flow",
    "loops",
    "approvals",
    "runs",
    "false_completions",
    "run_detail",
    "weekly_review",
    "sources",
)
"""Every page of the router (`app.py`), the landing page first; a page is
`views/<name>.py`."""
