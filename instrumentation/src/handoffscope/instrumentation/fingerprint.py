"""`fingerprint(task, state)`: a keyed, truncated HMAC of the normalized task and state.

Loop detection needs to know "same task, same state" across handoffs without ever
seeing the task. A plain hash of low-entropy text ("refund order 1001") can be reversed
by guessing, so we use HMAC-SHA256 with a per-deployment key from
`HANDOFFSCOPE_FINGERPRINT_KEY`; without it, a random per-process key is used (loops are
still found within a process, fingerprints just don't match across processes) and a
warning is logged once. Truncated to 16 hex chars (64 bits): plenty to tell tasks apart
within a run, too short to be a useful oracle.

Normalization makes trivially different spellings equal: Unicode NFKC, case-folded,
whitespace collapsed; mapping keys sorted; sets sorted; tuples as lists.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
import unicodedata
from typing import Any

from .stats import swallowed

_log = logging.getLogger(__name__)

KEY_ENV = "HANDOFFSCOPE_FINGERPRINT_KEY"
LENGTH = 16

_key: bytes | None = None
_key_lock = threading.Lock()


def _get_key() -> bytes:
    global _key
    if _key is None:
        with _key_lock:
            if _key is None:
                raw = os.environ.get(KEY_ENV)
                if raw:
                    _key = raw.encode("utf-8")
                else:
                    _log.warning(
                        "%s is not set: using a random per-process key; fingerprints will "
                        "not match across processes. Set it to the same secret in every app.",
                        KEY_ENV,
                    )
                    _key = secrets.token_bytes(32)
    return _key


def reset_key() -> None:
    """Forget the cached key (re-read `HANDOFFSCOPE_FINGERPRINT_KEY` on next use)."""
    global _key
    with _key_lock:
        _key = None


def _normalize(value: Any) -> Any:
    if isinstance(value, str):
        return " ".join(unicodedata.normalize("NFKC", value).casefold().split())
    if isinstance(value, dict):
        return {str(_normalize(k)): _normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalize(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_normalize(v) for v in value), key=repr)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _normalize(str(value))


def canonical(task: Any, state: Any = None) -> bytes:
    """The exact bytes that are MACed (exposed for tests and other-language shims)."""
    body = {"task": _normalize(task), "state": _normalize(state)}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def fingerprint(task: Any, state: Any = None, *, key: bytes | str | None = None) -> str:
    """16 hex chars of HMAC-SHA256(key, canonical(task, state)); never raises.

    On an internal failure it returns "" (and counts it in `stats.errors`), which the
    allowlist drops, so a bad input costs loop detection for one handoff, not the app.
    """
    try:
        k = key.encode() if isinstance(key, str) else (key or _get_key())
        return hmac.new(k, canonical(task, state), hashlib.sha256).hexdigest()[:LENGTH]
    except Exception:
        swallowed(_log, "fingerprint")
        return ""
