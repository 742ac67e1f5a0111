"""An adapter whose framework is not installed is skipped in one line, without a traceback.

`opentelemetry-instrument` loads every installed entry point and skips BaseInstrumentor's
dependency check, so an app with only LangGraph reaches the Agents SDK adapter's import of
`agents`. Checked by hand in a virtualenv with `instrumentation[langgraph]` alone (the
launcher printed a ModuleNotFoundError traceback before; nothing now). Here: the rule that
tells "not installed" from "installed but broken", on real imports.
"""

from __future__ import annotations

import importlib

import pytest

from handoffscope.instrumentation.instrumentor import _missing


def _error(name: str) -> ImportError:
    with pytest.raises(ImportError) as caught:
        importlib.import_module(name)
    return caught.value


def test_a_package_that_is_not_installed_is_missing() -> None:
    assert _missing(_error("no_such_agent_framework_4c1d"))
    assert _missing(_error("no_such_agent_framework_4c1d.tracing"))


def test_a_missing_part_of_an_installed_package_is_a_broken_install() -> None:
    assert not _missing(_error("json.no_such_submodule_4c1d"))
    assert not _missing(ImportError("cannot import name 'x' from 'json'"))
