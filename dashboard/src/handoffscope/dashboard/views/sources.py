"""Sources: every instrumentation that sends spans, and what became of them.

The answer to "I pointed my exporter at the collector and the board is empty": each
instrumentation scope per service, whether its spans are judged, read (a translator
reads them, no handoff in them yet) or refused — with the reason and what to do — and
the list of instrumentations the collector translates. Refused sources come first.
Counts are all-time (the collector's `sources` table); the time window does not apply.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from handoffscope.dashboard import client, layout, style

STATUS_ORDER = {"refused": 0, "read": 1, "judged": 2}
STATUS_WORDS = {
    "refused": "✗ not judged",
    "read": "… read, no handoff yet",
    "judged": "✓ judged",
}

st.title("Sources")
st.caption(
    "Every OpenTelemetry instrumentation scope that sent spans to this collector, per "
    "service, and what became of its spans (all time)."
)
filters = layout.current_filters()

with layout.guard():
    sources, translators = client.sources(filters.service)
    if sources.empty:
        conn = client.connection()
        layout.empty_state(
            "No spans received yet",
            None,
            f"Point an OTLP exporter at `{conn.api}/v1/traces` (HTTP) or the collector's gRPC "
            "port; every instrumentation that sends spans is listed here within seconds.",
        )
    else:
        sources = sources.assign(_order=sources["status"].map(STATUS_ORDER).fillna(3))
        sources = sources.sort_values(["_order", "last_seen_at"], ascending=[True, False])
        refused = sources[sources["status"] == "refused"]
        c1, c2, c3 = st.columns(3)
        c1.metric("Judged", style.count(int((sources["status"] == "judged").sum()), "source"))
        c2.metric(
            "Read, no handoff yet", style.count(int((sources["status"] == "read").sum()), "source")
        )
        c3.metric("Not judged", style.count(len(refused), "source"))
        if not refused.empty:
            names = ", ".join(f"`{style.text(s)}`" for s in refused["scope"].head(5))
            st.warning(
                f"**{style.count(len(refused), 'instrumentation scope')} sent spans that are "
                f"not judged** ({names}{', …' if len(refused) > 5 else ''}). Their spans are "
                "refused: they are not handoff evidence and no translator reads them. The "
                "Advice column says what to do.",
                icon=":material/warning:",
            )
        view = pd.DataFrame(
            {
                "Service": [style.text(v) for v in sources["service"]],
                "Instrumentation scope": [style.text(v) for v in sources["scope"]],
                "Status": [STATUS_WORDS.get(s, s) for s in sources["status"]],
                "Read as": [style.text(v, "handoff contract") for v in sources["translator_label"]],
                "Spans received": sources["spans_received"].astype(int).to_numpy(),
                "Evidence": sources["evidence_spans"].astype(int).to_numpy(),
                "Refused": sources["refused_spans"].astype(int).to_numpy(),
                "Last seen": [style.clock(t) for t in sources["last_seen_at"]],
                "Advice": [style.text(v) for v in sources["advice"]],
            }
        )
        layout.table(view)

    st.subheader("What this collector reads")
    st.caption(
        "Spans of these instrumentations are translated into handoff evidence (prompts, "
        "messages and tool arguments are dropped before storage); the handoffscope "
        "instrumentors' own spans are evidence as they come. Instrumentations that follow "
        "OpenTelemetry's GenAI agent conventions are read by meaning, whatever their scope."
    )
    if not translators.empty:
        layout.table(
            pd.DataFrame(
                {
                    "Source": [style.text(v) for v in translators["label"]],
                    "Instrumentation scopes": [
                        ", ".join(s) if len(s) else "(any scope, by meaning)"
                        for s in translators["scopes"]
                    ],
                }
            )
        )
