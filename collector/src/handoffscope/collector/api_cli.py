"""`handoffscope api`: parse config (flags, then HANDOFFSCOPE_* variables), serve.

    handoffscope api --store postgresql://handoffscope@db.internal/handoffscope \\
        --host 0.0.0.0 --http-port 4320 --grace-seconds 30

The query API alone over a store the collectors write (`query_server.py`); see
`handoffscope api --help` or docs/configuration.md for every setting.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

from handoffscope.collector.config import parse_query_args
from handoffscope.collector.no_pandas import without_pandas


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_query_args(argv)
    without_pandas()  # as the collector (no_pandas.py)
    logging.basicConfig(
        level=config.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")  # as the collector (cli.py)
    from handoffscope.collector.query_server import run

    return run(config)
