"""fingerprint(): keyed, normalized, truncated; key from the environment."""

from __future__ import annotations

import hashlib
import hmac
import logging

import pytest

from handoffscope.instrumentation import fingerprint
from handoffscope.instrumentation.fingerprint import KEY_ENV, canonical, reset_key


def test_keyed_hmac_truncated_to_16_hex() -> None:
    fp = fingerprint("Refund order 1001", {"v": 3}, key=b"k1")
    expected = hmac.new(
        b"k1", canonical("Refund order 1001", {"v": 3}), hashlib.sha256
    ).hexdigest()[:16]
    assert fp == expected
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert fingerprint("Refund order 1001", {"v": 3}, key=b"k2") != fp
    assert fingerprint("Refund order 1001", {"v": 4}, key=b"k1") != fp
    # a plain hash of the text is not what goes on the wire
    assert hashlib.sha256(b"Refund order 1001").hexdigest()[:16] != fp


def test_normalization() -> None:
    a = fingerprint("  Refund   ORDER 1001 ", {"b": 1, "a": {2, 1}}, key=b"k")
    b = fingerprint("refund order 1001", {"a": [1, 2], "b": 1}, key=b"k")
    assert a == b


def test_key_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "deployment-secret")
    reset_key()
    try:
        assert fingerprint("t") == fingerprint("t", key=b"deployment-secret")
    finally:
        reset_key()


def test_random_key_with_warning_when_unset(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    reset_key()
    try:
        with caplog.at_level(logging.WARNING):
            first = fingerprint("t")
        assert KEY_ENV in caplog.text
        assert first == fingerprint("t")  # stable within the process
        reset_key()
        assert fingerprint("t") != first  # a new random key
    finally:
        reset_key()


def test_never_raises_on_odd_input() -> None:
    class Odd:
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert fingerprint(Odd(), key=b"k") == ""
    assert len(fingerprint(object(), key=b"k")) == 16
