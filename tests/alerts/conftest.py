"""Fixtures for the alert tests: a real webhook receiver (tests/alerts/alerts_support.py).

The collector fixtures (`collector_factory`, `otlp_sender_factory`) are tests/conftest.py's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from alerts_support import Receiver


@pytest.fixture
def receiver_factory() -> Iterator[Any]:
    made: list[Receiver] = []

    def make(answers: list[Any] | None = None) -> Receiver:
        r = Receiver(answers)
        made.append(r)
        return r

    yield make
    for r in made:
        r.close()


@pytest.fixture
def receiver(receiver_factory: Any) -> Receiver:
    return receiver_factory()
