"""`without_pandas()`: the collector's processes run without pandas (`_WithoutPandas` says why).

Installed by the entry points (`handoffscope collector`, `handoffscope api`) and by the
judge worker process, never by an import of the collector's modules into someone else's
process.
"""

from __future__ import annotations

import importlib.abc
import sys


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
