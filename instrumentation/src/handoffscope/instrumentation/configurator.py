"""`HandoffConfigurator`: `opentelemetry-instrument python app.py`, with no handoffscope line in the app.

    pip install 'handoffscope-instrumentation[langgraph]'
    OTEL_SERVICE_NAME=support-bot opentelemetry-instrument python app.py

`opentelemetry-instrument` runs one configurator (entry point group
`opentelemetry_configurator`), then every instrumentor it finds (`opentelemetry_instrumentor`):
ours are `handoffscope_langgraph` and `handoffscope_openai_agents`, each skipped when its
framework is not installed. This configurator is `configure()` with the standard
`OTEL_*` variables (and `HANDOFFSCOPE_TOKEN`), so the adapters' spans go to a handoffscope
collector. When another configurator is installed too (`opentelemetry-distro`'s), pick one
with `OTEL_PYTHON_CONFIGURATOR=handoffscope`; when a tracer provider is already set, this
one leaves it alone.
"""

from __future__ import annotations

import logging
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from .configure import configure
from .stats import swallowed

_log = logging.getLogger(__name__)


class HandoffConfigurator:
    # Not opentelemetry-sdk's `_BaseConfigurator`: it is private API, and all
    # `opentelemetry-instrument` asks of a configurator is `configure(**kwargs)`.

    def configure(self, **kwargs: Any) -> None:
        """Install `configure()`'s tracer provider globally, unless one is set. Never raises."""
        try:
            if isinstance(trace.get_tracer_provider(), TracerProvider):
                return
            configure()
        except Exception:
            swallowed(_log, "opentelemetry-instrument configuration")
