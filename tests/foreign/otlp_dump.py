"""A tiny OTLP/HTTP receiver that writes every span it gets as JSON, to study a source's spans.

For writing the catalogue in docs/foreign-spans.md, not for tests: tests export to the real
collector. Run it with the project's python, point a scenario driver at it, read the dump:

    .venv/bin/python tests/foreign/otlp_dump.py --port 4399 --out /tmp/adk.json &
    OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4399 ENV_PYTHON tests/foreign/envs/adk/scenario.py healthy

The dump holds whatever the framework exported, content included: keep it out of the repo.
"""

from __future__ import annotations

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=4399)
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args()
    requests: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            requests.append(MessageToDict(request))
            options.out.write_text(json.dumps(requests, indent=1))
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", options.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
