"""Run detail of a 10,000-handoff run (issue 13, item 6): it renders, paged, path folded.

The real Streamlit app (AppTest) against a real collector holding one run of 10,000
handoffs, sent in one export by the real OTLP exporter. The page used to add one plotly
annotation per handoff and list every handoff (300 took 34 s, 600 never finished); now it
lists one page of 200 with the total, lets the user page, draws the path from the
collector's folded summary, and keeps its charts to a bounded number of traces. How long
it takes is measured in bench/bench_run_detail.py, not here.
"""

from __future__ import annotations

import json

from dashboard_support import BIG_HANDOFFS, RUN_BIG, open_page, plotly_specs, tables, texts

from handoffscope.dashboard import run_sections


def _figure(spec: str) -> dict:
    return json.loads(spec)


def test_run_detail_of_a_10k_handoff_run_is_paged_and_folded(big_run_api, monkeypatch):
    at = open_page("run_detail", monkeypatch, big_run_api, query={"run_id": RUN_BIG})
    page = texts(at)
    assert f"Showing 1–200 of {BIG_HANDOFFS:,} handoffs." in page
    assert f"Handoffs: {BIG_HANDOFFS:,} handoffs" in page  # the run's count, not the page's
    handoffs = tables(at)[0]
    assert list(handoffs["#"]) == list(range(1, 201))
    assert handoffs.iloc[0]["Handoff"] == "triage → billing"
    # The path: every handoff admitted, so 10,001 steps, folded to one cycle.
    assert "(triage → billing) ×5,000" in page
    path_chart, timeline = (_figure(s) for s in plotly_specs(at))
    assert len(path_chart["layout"].get("annotations", [])) < run_sections.PATH_CHART_MAX
    assert "shapes" not in timeline["layout"]  # no shape per span
    assert len(timeline["data"]) <= 12  # a trace per span kind (and its duration bars)

    pager = at.number_input(key=run_sections.PAGE_KEY)
    assert pager.max == BIG_HANDOFFS // 200
    pager.set_value(BIG_HANDOFFS // 200).run()
    assert not at.exception, [e.value for e in at.exception]
    assert f"Showing 9,801–10,000 of {BIG_HANDOFFS:,} handoffs." in texts(at)
    last = tables(at)[0]
    assert list(last["#"])[:2] == [9801, 9802] and list(last["#"])[-1] == BIG_HANDOFFS
    assert last.iloc[-1]["Handoff"] == "billing → triage"
