"""One way to print a time on the wire.

Every answer the collector gives (query API, notifier events, webhook bodies)
writes instants as `2026-11-30T12:00:00.123Z`: UTC, milliseconds, a trailing
`Z`. `iso` is that format's only home, so the query API and the notifier both
import it from here rather than the notifier reaching up into `query.api`.
"""

from __future__ import annotations

import datetime as dt

NS = 10**9


def iso(ns: int | None) -> str | None:
    """Epoch ns as `2026-11-30T12:00:00.123Z` (UTC, milliseconds); None stays None."""
    if ns is None:
        return None
    try:
        secs, rem = divmod(ns, NS)
        t = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs)
    except OverflowError:
        # Out-of-range ns (a corrupt or hostile timestamp) prints as absent, not a crash.
        return None
    return f"{t:%Y-%m-%dT%H:%M:%S}.{rem // 1_000_000:03d}Z"
