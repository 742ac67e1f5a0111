"""Coverage-guided fuzzing (atheris / libFuzzer) of what the receivers do with a body.

    .venv/bin/python tests/hardening/fuzz_decode.py -runs=200000 -max_len=65536 [CORPUS_DIR]

Each input picks a path — protobuf (every gRPC export, OTLP/HTTP protobuf), OTLP/JSON,
or either through gzip/deflate inflation with a small ceiling — and runs the collector's
own code on it, in process, with coverage feedback steering the mutations: `decode`,
then the allowlist, then the Arrow table the writer would insert. The properties:

- decoding either succeeds or raises the receiver's own errors (`DecodeError` -> 400 /
  INVALID_ARGUMENT, `BodyTooLarge` -> 413, `UnsupportedEncoding` -> 415); anything else
  would be a 500 (HTTP) or UNKNOWN (gRPC);
- the allowlist never raises on a decoded export, accounts for every span (kept +
  refused = received), and its columns all have one value per kept span;
- the kept spans always build the `spans` Arrow table (so the writer's commit cannot fail
  on them and answer 503 to a retrying exporter forever).

A crash prints the input and exits non-zero (libFuzzer writes it as `crash-<sha1>`).
Run by `make soak` (tests/hardening/test_fuzz.py); seeds are written to CORPUS_DIR
when it is empty.
"""

from __future__ import annotations

import gc
import sys
import types
from pathlib import Path

import atheris

from handoffscope.collector.otlp import decode
from handoffscope.collector.processor.allowlist import Allowlist
from handoffscope.collector.store.spans import build_spans_table

LIMIT = 256 * 1024
EXPECTED = (decode.DecodeError, decode.BodyTooLarge, decode.UnsupportedEncoding)
ALLOWLIST = Allowlist()
ENCODINGS = ("", "gzip", "deflate", "identity", "br")


def test_one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    # Byte 0 picks the content type, byte 1 the Content-Encoding; the rest is the body.
    content_type = decode.PROTOBUF if data[0] & 1 else decode.JSON
    encoding = ENCODINGS[data[1] % len(ENCODINGS)]
    body = data[2:]
    try:
        export = decode.parse(decode.inflate(body, encoding, LIMIT), content_type)
    except EXPECTED:
        return
    batch = ALLOWLIST.process(export)
    assert batch.count + batch.rejected == batch.received, batch
    assert all(len(values) == batch.count for values in batch.columns.values())
    columns = dict(batch.columns)
    columns["received_ns"] = [1] * batch.count
    assert build_spans_table(columns).num_rows == batch.count


def seed_corpus(directory: Path) -> None:
    """A valid protobuf and JSON export to start mutating from (only into an empty dir)."""
    if any(directory.iterdir()):
        return
    sys.path.insert(0, str(Path(__file__).parents[1]))  # tests/: the support package
    from support.evidence import request_attributes
    from support.otlp import export_request, otlp_span, to_otlp_json

    from handoffscope.instrumentation import semconv as sc

    request = export_request(
        [
            otlp_span(sc.SPAN_REQUEST, request_attributes("run-seed", "h1")),
            otlp_span("openai.chat", {"gen_ai.prompt": "x"}),
        ]
    )
    (directory / "seed-protobuf").write_bytes(b"\x01\x00" + request.SerializeToString())
    (directory / "seed-json").write_bytes(b"\x00\x00" + to_otlp_json(request))


def instrument_handoffscope() -> None:
    """Coverage feedback from our own code only.

    `atheris.instrument_imports()` does not see these modules (a PEP 420 namespace package
    under an editable install), and `instrument_all()` spends a minute on every library
    loaded; protobuf's upb and json are C, uninstrumentable either way.
    """
    for obj in gc.get_objects():
        if isinstance(obj, types.FunctionType) and (obj.__module__ or "").startswith(
            "handoffscope."
        ):
            atheris.instrument_func(obj)


def main() -> None:
    corpus = [Path(a) for a in sys.argv[1:] if not a.startswith("-")]
    for directory in corpus:
        directory.mkdir(parents=True, exist_ok=True)
        seed_corpus(directory)
    instrument_handoffscope()
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
