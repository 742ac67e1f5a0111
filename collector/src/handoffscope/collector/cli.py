"""`handoffscope collector`: parse config (flags, then HANDOFFSCOPE_* variables), run.

    handoffscope collector --db ./handoffscope.duckdb --host 127.0.0.1 \\
        --http-port 4318 --grpc-port 4317 --grace-seconds 30

See `handoffscope collector --help` or docs/configuration.md for every setting.
"""

from __future__ import annotations

import importlib.abc
import logging
import os
import sys
from collections.abc import Sequence

from handoffscope.collector.config import parse_args


class _WithoutPandas(importlib.abc.MetaPathFinder):
    """Refuses `import pandas` in the collector's process.

    The collector never uses pandas, but pyarrow imports it on its first conversion of a
    Python list, to check whether the list holds pandas objects, when pandas is installed
    (it is wherever the dashboard is): 1.9 s of every start on an idle machine (5-15 s
    loaded, measured) and its memory for the life of the process. Refused, pyarrow takes
    its documented no-pandas path. Installed by the entry points only, never by an import
    of the collector's modules into someone else's process.
    """

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ImportError("the handoffscope collector runs without pandas")
        return None


def without_pandas() -> None:
    if "pandas" not in sys.modules and not any(
        isinstance(f, _WithoutPandas) for f in sys.meta_path
    ):
        sys.meta_path.insert(0, _WithoutPandas())


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
