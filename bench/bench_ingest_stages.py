"""Where an export's time goes on the way to a commit, stage by stage, in µs per span.

One 512-span export made with the real OTel SDK (bench_receiver's template: request,
accept, outcome and run spans, 7 contract attributes a span), taken through the
collector's own code in ONE thread, with nothing else competing:

1. parse: `decode.parse_protobuf` (protobuf, upb), as the receivers do first;
2. parse + allowlist: the same, then `Allowlist.process` on the export and its bytes —
   the first export cold, then warm (every encoded attribute's decision remembered);
3. Arrow build: `Writer.submit`'s `build_spans_table`;
4. group + insert + commit: `_group_table` over 4 exports (the writer's typical group at
   4 connections), `insert_new_spans` and the commit, into a real DuckDB file.

Baseline, measured in the same run: parsing the export and walking it the way the
allowlist used to read it — every span's ids, name and times, and every attribute's key
and string value through the full protobuf message (a fresh message each time, as every
export is), nothing decided or stored. Parse + allowlist is printed as a ratio to it. Timings are never asserted; this machine is shared and noisy.

    .venv/bin/python bench/bench_ingest_stages.py [--exports 200]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from concurrent.futures import Future

import bench_receiver  # bench/ is on sys.path: these scripts run as files
import pyarrow as pa
import pyarrow.compute as pc

from handoffscope.collector.config import CollectorConfig
from handoffscope.collector.otlp.decode import parse_protobuf
from handoffscope.collector.processor.allowlist import Allowlist, SpanBatch
from handoffscope.collector.store.duckdb_store import DuckDBStore
from handoffscope.collector.store.spans import build_spans_table
from handoffscope.collector.writer import _group_table, _Job

SPANS = bench_receiver.SPANS_PER_EXPORT
GROUP = 4


def per_span(seconds: float, exports: int) -> float:
    return seconds / exports / SPANS * 1e6


def timed(fn, exports: int) -> float:
    start = time.perf_counter()
    for _ in range(exports):
        fn()
    return per_span(time.perf_counter() - start, exports)


def message_walk(request) -> int:
    """The baseline: read what the allowlist needs through the full message, decide nothing."""
    n = 0
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                _ = (span.name, span.trace_id, span.span_id, span.start_time_unix_nano)
                for kv in span.attributes:
                    _ = (kv.key, kv.value.string_value)
                    n += 1
    return n


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--exports", type=int, default=200, help="exports per stage")
    args = parser.parse_args()
    n = args.exports

    body, _ = bench_receiver.make_template()
    request = parse_protobuf(body)
    pa.array([], pa.string())  # pyarrow's one-off import of pandas, not a stage's cost

    parse = timed(lambda: parse_protobuf(body), n)
    walk = timed(lambda: message_walk(parse_protobuf(body)), n)
    cold_start = time.perf_counter()
    Allowlist().process(parse_protobuf(body), body=body)
    cold = per_span(time.perf_counter() - cold_start, 1)
    allowlist = Allowlist()
    warm = timed(lambda: allowlist.process(parse_protobuf(body), body=body), n)
    batch = allowlist.process(request, body=body)
    batch.columns["received_ns"] = [time.time_ns()] * batch.count
    build = timed(lambda: build_spans_table(batch.columns), n)
    table = build_spans_table(batch.columns)

    groups = []
    for g in range(max(1, n // GROUP)):
        jobs = []
        for j in range(GROUP):
            ids = pa.array([f"{g:06x}{j:02x}{k:08x}" for k in range(SPANS)], pa.string())
            t = table.set_column(table.schema.get_field_index("span_id"), "span_id", ids)
            starts = pc.add(t.column("start_ns"), g * 10**6)
            t = t.set_column(t.schema.get_field_index("start_ns"), "start_ns", starts)
            spans = SpanBatch(columns={}, count=SPANS, received=SPANS, drops=Counter())
            jobs.append(_Job(t, spans, Future()))
        groups.append(jobs)
    with tempfile.TemporaryDirectory(prefix="bench-stages-") as tmp:
        store = DuckDBStore(
            os.path.join(tmp, "stages.duckdb"), memory_limit=CollectorConfig().memory_limit
        )
        try:
            grouped = inserted = committed = 0.0
            for seq, jobs in enumerate(groups, 1):
                a = time.perf_counter()
                group = _group_table(jobs)
                b = time.perf_counter()
                store.con.begin()
                store.insert_new_spans(group, commit_seq=seq)
                c = time.perf_counter()
                store.con.commit()
                d = time.perf_counter()
                grouped, inserted, committed = grouped + b - a, inserted + c - b, committed + d - c
        finally:
            store.close()
    exports = len(groups) * GROUP

    print(f"ingest stages, one {SPANS}-span export ({len(body) // 1024} KiB), µs per span:")
    print(f"  parse (protobuf, upb)                        {parse:7.2f}")
    print(f"  baseline: parse + walk the message's attributes {walk:7.2f}")
    print(
        f"  parse + allowlist, warm                      {warm:7.2f}   = {warm / walk:.2f}x the walk"
    )
    print(f"  parse + allowlist, first export (cold)       {cold:7.2f}")
    print(f"  Arrow build                                  {build:7.2f}")
    print(f"  group of {GROUP} exports (concat, dedupe)          {per_span(grouped, exports):7.2f}")
    print(f"  insert into DuckDB                           {per_span(inserted, exports):7.2f}")
    print(f"  commit                                       {per_span(committed, exports):7.2f}")
    total = warm + build + per_span(grouped + inserted + committed, exports)
    print(f"  sum: {total:.1f} µs a span = {1e6 / total:,.0f} spans/s in one thread")


if __name__ == "__main__":
    main()
