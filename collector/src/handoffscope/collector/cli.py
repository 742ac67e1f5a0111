"""`handoffscope collector`: parse config (flags, then HANDOFFSCOPE_* variables), run.

    handoffscope collector --db ./handoffscope.duckdb --host 127.0.0.1 \\
        --http-port 4318 --grpc-port 4317 --grace-seconds 30

See `handoffscope collector --help` or docs/configuration.md for every setting.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from handoffscope.collector.config import parse_args
from handoffscope.collector.no_pandas import without_pandas


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    without_pandas()
    logging.basicConfig(
        level=config.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # pydantic loads every installed pydantic plugin when the query API's models are
    # built; logfire's, present wherever logfire is installed, would see each request's
    # parameters (run ids, search text) and costs most of a second at start. The
    # collector validates its own parameters and reports to no one: no plugins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # Imported here so `--help` answers without loading grpc, duckdb and pyarrow.
    from handoffscope.collector.server import run

    return run(config)
