"""`handoffscope collector`: parse config (flags, then HANDOFFSCOPE_* variables), run.

    handoffscope collector --db ./handoffscope.duckdb --host 127.0.0.1 \\
        --http-port 4318 --grpc-port 4317 --grace-seconds 30

See `handoffscope collector --help` or docs/configuration.md for every setting.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from handoffscope.collector.config import parse_args


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    logging.basicConfig(
        level=config.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # Imported here so `--help` answers without loading grpc, duckdb and pyarrow.
    from handoffscope.collector.server import run

    return run(config)
