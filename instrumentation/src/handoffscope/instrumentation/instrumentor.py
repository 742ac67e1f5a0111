"""`HandoffInstrumentor`: what both framework adapters share, on OpenTelemetry's `BaseInstrumentor`.

An adapter is a `BaseInstrumentor`, so it has the shape every OpenTelemetry
instrumentation has — `instrument(tracer_provider=None, **settings)`, `uninstrument()`,
`is_instrumented_by_opentelemetry`, `instrumentation_dependencies()` checked against the
installed packages before anything is patched — and it is found through the
`opentelemetry_instrumentor` entry point, so `opentelemetry-instrument python app.py`
instruments an app that has no handoffscope line in it. There, when no configurator has
set a tracer provider (no `opentelemetry-distro`), the adapter sets up `configure()`'s own
from the standard `OTEL_*` variables; when one has, the adapter reports into it, as every
other instrumentation does — we never replace a provider the app's deployment chose.

Why OpenTelemetry's base rather than a small one of our own: that entry point is how a
whole OpenTelemetry deployment switches instrumentations on and off
(`OTEL_PYTHON_DISABLED_INSTRUMENTATIONS`), and the dependency check is theirs to keep
right. Its cost is the `opentelemetry-instrumentation` distribution, which brings `wrapt`
(a small compiled wheel; we do not use it ourselves) and `packaging`; an app exporting
OpenTelemetry traces nearly always has both already.

What this base adds, and why:

- **One instance per process, made under a lock.** `BaseInstrumentor.__new__` is a
  singleton too, but unlocked: two threads instrumenting at once could each build one and
  wrap the framework twice. The adapter's state is set up once, in `_init()`.
- **Settings are a frozen dataclass** (`settings_type`): an unknown name raises
  `TypeError` at `instrument()`, where a typo should be loud. Nothing raises after that.
- **Attached or not.** `BaseInstrumentor` counts an instrumentation as done once
  `_instrument` returns; ours returns whether it attached, so a framework that is
  installed but does not import (logged, with the extra to install), or whose API moved,
  leaves `is_instrumented_by_opentelemetry` false.
- **Re-instrumenting** while instrumented calls `_reconfigure` (by default a warning, as
  `BaseInstrumentor` does) — LangGraph's adapter takes the new settings instead.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
from dataclasses import fields
from typing import Any, ClassVar

# The module opens with `# type: ignore`, so mypy sees nothing in it: BaseInstrumentor is Any.
from opentelemetry.instrumentation.instrumentor import (  # type: ignore[attr-defined]
    BaseInstrumentor,
)
from opentelemetry.trace import TracerProvider

_log = logging.getLogger(__name__)

_BASE_OPTIONS = ("skip_dep_check", "raise_exception_on_conflict")
"""`BaseInstrumentor.instrument` options (the second is what `opentelemetry-instrument` passes)."""


class HandoffInstrumentor(BaseInstrumentor):  # type: ignore[misc]
    """Base of `LangGraphInstrumentor` and `OpenAIAgentsInstrumentor`; see the module docstring."""

    settings_type: ClassVar[type]
    """The adapter's settings dataclass: what `instrument(**settings)` accepts."""
    extra: ClassVar[str]
    """The `handoffscope-instrumentation[...]` extra that installs the framework."""
    _instance_lock: ClassVar[threading.Lock] = threading.Lock()
    _lock: threading.Lock
    _is_instrumented_by_opentelemetry: bool

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        with HandoffInstrumentor._instance_lock:
            # Looked up on the class itself, not inherited: each adapter has its own.
            inst = cls.__dict__.get("_instance")
            if inst is None:
                inst = object.__new__(cls)
                inst._lock = threading.Lock()
                inst._init()
                cls._instance = inst
            return inst

    def _init(self) -> None:
        """Set up the adapter's state (runs once per process)."""

    # -- BaseInstrumentor ------------------------------------------------------------------

    def instrument(self, tracer_provider: TracerProvider | None = None, **settings: Any) -> None:
        """Start reporting to `tracer_provider` (default: the global one, see `configure()`).

        `settings`: the fields of the adapter's settings dataclass; unknown ones raise
        `TypeError`. A framework that is not installed is logged, not raised.
        """
        options = {k: settings.pop(k) for k in _BASE_OPTIONS if k in settings}
        known = {f.name for f in fields(self.settings_type)}
        unknown = sorted(set(settings) - known)
        if unknown:
            raise TypeError(
                f"unknown {type(self).__name__} setting(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        chosen = self.settings_type(**settings)
        with self._lock:
            if self._is_instrumented_by_opentelemetry:
                self._reconfigure(tracer_provider, chosen)
                return
            attached = super().instrument(
                tracer_provider=tracer_provider, settings=chosen, **options
            )
            if attached is not True:
                self._is_instrumented_by_opentelemetry = False

    def uninstrument(self, **kwargs: Any) -> None:
        """Stop reporting and restore everything `instrument()` changed."""
        with self._lock:
            super().uninstrument(**kwargs)

    def _instrument(self, **kwargs: Any) -> bool:
        try:
            _configure_if_launched_bare(kwargs.get("tracer_provider"))
            return self._attach(kwargs.get("tracer_provider"), kwargs["settings"])
        except ImportError as exc:
            if not _missing(exc):
                # Installed but does not import (a broken or partial install): logged with
                # its traceback, not raised.
                _log.warning(
                    "handoffscope: %s skipped, its framework does not import "
                    "(pip install 'handoffscope-instrumentation[%s]')",
                    type(self).__name__,
                    self.extra,
                    exc_info=True,
                )
                return False
            # `opentelemetry-instrument` loads every adapter whose entry point is installed
            # and skips BaseInstrumentor's dependency check: an app with only LangGraph
            # reaches here for the Agents SDK. Not installed is a fact, not a fault — one
            # line, no traceback.
            _log.info(
                "handoffscope: %s skipped: %s is not installed "
                "(pip install 'handoffscope-instrumentation[%s]' to use it)",
                type(self).__name__,
                getattr(exc, "name", None) or "its framework",
                self.extra,
            )
            return False

    def _uninstrument(self, **kwargs: Any) -> None:
        self._detach()

    # -- what an adapter implements --------------------------------------------------------

    def _attach(self, tracer_provider: TracerProvider | None, settings: Any) -> bool:
        """Patch the framework (called with the lock held); True once attached."""
        raise NotImplementedError

    def _detach(self) -> None:
        """Undo `_attach` (called with the lock held); never raises."""
        raise NotImplementedError

    def _reconfigure(self, tracer_provider: TracerProvider | None, settings: Any) -> None:
        _log.warning("handoffscope: %s already instrumented", type(self).__name__)


AUTO_INSTRUMENTATION = "opentelemetry.instrumentation.auto_instrumentation"
"""Imported by `opentelemetry-instrument`'s sitecustomize before any instrumentor runs."""


def _configure_if_launched_bare(tracer_provider: TracerProvider | None) -> None:
    """Under `opentelemetry-instrument` with no configurator (nothing set a global SDK
    tracer provider), install `configure()`'s, so the adapters' spans reach the collector
    named by `OTEL_EXPORTER_OTLP_ENDPOINT`. Never in an app that instruments in code: there
    `configure()` is the app's call to make, and a provider set here would refuse its own."""
    if tracer_provider is not None or AUTO_INSTRUMENTATION not in sys.modules:
        return
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider as SDKTracerProvider

    if isinstance(trace.get_tracer_provider(), SDKTracerProvider):
        return  # a configurator (opentelemetry-distro's, or the team's own) chose one
    from .configure import configure

    configure()


def _missing(exc: ImportError) -> bool:
    """Whether `exc` says a framework is not installed at all (its top-level package has
    no spec), rather than installed and broken."""
    name = exc.name if isinstance(exc, ModuleNotFoundError) else None
    if not name:
        return False
    try:
        return importlib.util.find_spec(name.split(".")[0]) is None
    except (ImportError, ValueError):
        return False
