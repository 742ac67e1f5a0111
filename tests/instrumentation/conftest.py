"""Fixtures for the instrumentation core: a recorder on `provider` (tests/conftest.py: an
in-memory exporter behind a real TracerProvider)."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider

from handoffscope.instrumentation import HandoffRecorder, stats


@pytest.fixture
def recorder(provider: TracerProvider) -> HandoffRecorder:
    stats.reset()
    return HandoffRecorder(provider)
