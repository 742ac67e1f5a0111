"""One instance per process, the way OpenTelemetry's `BaseInstrumentor` works.

`SomeInstrumentor()` always returns the same object, so an app (or two libraries in
it) that instruments twice never wraps a framework twice. Subclasses set up their
state in `_init()`, which runs once.
"""

from __future__ import annotations

import threading
from typing import Any


class ProcessSingleton:
    _instance_lock = threading.Lock()

    def __new__(cls) -> Any:
        with ProcessSingleton._instance_lock:
            # Looked up on the class itself, not inherited: each subclass has its own.
            inst = cls.__dict__.get("_instance")
            if inst is None:
                inst = super().__new__(cls)
                inst._init()
                cls._instance = inst
            return inst

    def _init(self) -> None:
        """Set up the instance's state (runs once per process)."""
