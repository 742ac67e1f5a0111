"""False completions: runs that said "done" without a passing verifier, newest first.

docs/architecture.md, Verdicts, rule 8: a run claims `completed` (or a destination claims
done while a wait is open) and no `handoff.outcome` with result `pass` backs it. The table
tells apart "the verifier failed" from "no verifier ran"; the chart shows which agents make
the claim.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import charts, client, layout, style
from handoffscope.instrumentation import semconv as sc

st.title("False completions")
st.caption("Runs that claimed done without a passing verifier, newest first.")
filters = layout.current_filters()


def _verifier_words(result: object, verifier: object) -> str:
    if result == sc.OUTCOME_FAIL:
        return (
            f"✗ {verifier} failed"
            if isinstance(verifier, str) and verifier
            else "✗ verifier failed"
        )
    return "no verifier ran"


with layout.guard():
    listed = client.false_completions(filters.service, filters.window_seconds, limit=1000)
    runs = listed.rows
    if runs.empty:
        layout.empty_state(
            "No false completions",
            filters,
            "Every run that claimed done in this window had a passing verifier.",
        )
    else:
        runs = runs.sort_values("ended_at", ascending=False, na_position="last")
        failed = int((runs["outcome_result"] == sc.OUTCOME_FAIL).sum())
        c1, c2, c3 = st.columns(3)
        c1.metric("Runs", style.count(listed.total, "run"))
        # Of the listed runs (all of them unless the list is capped, which it says).
        c2.metric("Verifier failed", style.count(failed, "run"))
        c3.metric("No verifier ran", style.count(len(runs) - failed, "run"))

        view = pd.DataFrame({"Ended": [style.clock(t) for t in runs["ended_at"]]})
        view["Run"] = [layout.run_url(r) for r in runs["run_id"]]
        view["Service"] = runs["service"].to_numpy()
        view["Claimed done by"] = runs["final_agent"].fillna("?").to_numpy()
        view["Verifier"] = [
            _verifier_words(r, v)
            for r, v in zip(runs["outcome_result"], runs["verifier"], strict=True)
        ]
        view["Safe next step"] = style.next_step(sc.FALSE_COMPLETE)
        layout.table(view, column_config={"Run": layout.run_link_column()})
        layout.capped(len(runs), listed.total, "run", "Narrow the time window or pick a service.")

        st.subheader("Who claims done without proof")
        st.plotly_chart(
            charts.counts_by(
                runs, "final_agent", unit="run", color=style.verdict_color(sc.FALSE_COMPLETE)
            ),
            key="fc_by_agent",
        )
