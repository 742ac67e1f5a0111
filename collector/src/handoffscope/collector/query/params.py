"""Query-parameter parsing for the query API: every documented parameter, checked.

Each parser takes the raw string (or None when absent) and returns the value the SQL
binds, or raises `BadParam` with a sentence for the 400 answer. The annotated types at
the end (`Limit`, `Time`, `Service`, ...) put a parser and the schema it enforces on
one field of a parameter model (`models.py`): pydantic runs the parser as the field's
validator, FastAPI writes the schema into the generated OpenAPI document, so the rule
and its documentation are declared once, side by side. A value the document calls valid
is accepted (schemathesis checks both directions).

The parsers, not pydantic's own coercion, decide: pydantic would take `?limit= 5`,
`?limit=1_000`, `?limit=5.0` or `?ids=1`, and answer 422 with a list of errors; the API answers 400
with one sentence naming the parameter (`limit: must be from 1 to 1000, got 0`), which
the RequestValidationError handler (`api.py`) takes from the `BadParam` itself.

Times (`since`, `until`) are RFC 3339 / ISO-8601 date-times (`2026-11-30T12:00:00Z`,
`...T12:00:00.123+01:00`, lowercase `t`/`z`, a leap second `:60`, with or without the
time part) or epoch seconds (`1796036039`, `1796036039.5`). They become epoch
nanoseconds, clamped to the range of a 64-bit column so no far-future or ancient date
can overflow a bound parameter.

An empty value (`?limit=`) is a bad value, not an absent one — except `service=`, which
the schema allows and which means "every service". A repeated parameter counts once,
with its last value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema

from handoffscope.instrumentation import semconv as sc

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
NS = 10**9

MAX_LIMIT = 1000
DEFAULT_LIMIT = 100
MAX_SERVICE_LEN = 256
MAX_WINDOW_SECONDS = 30 * 86_400
MAX_WEEKS = 104

SERVICE_PATTERN = r"^[^\x00-\x1f\x7f]*$"
"""Any text without control characters (a NUL cannot be bound as a DuckDB string)."""
EPOCH_PATTERN = r"^[0-9]{1,12}(\.[0-9]{1,9})?$"
"""Epoch seconds, optionally with a fraction."""

_EPOCH = re.compile(EPOCH_PATTERN)
_SERVICE = re.compile(SERVICE_PATTERN)
_DATETIME = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})"
    r"(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?"
    r"([Zz]|[+-]\d{2}:\d{2})?$"
)
_INT = re.compile(r"^[+-]?[0-9]+$")
MAX_INT_DIGITS = 40


class BadParam(ValueError):
    """A query parameter has a value the API does not accept (answered 400)."""


def _days_from_civil(y: int, m: int, d: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).

    Pure arithmetic, so year 0000 (valid in RFC 3339, not in `datetime`) works too.
    """
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _month_days(y: int, m: int) -> int:
    if m == 2:
        return 29 if (y % 4 == 0 and y % 100 != 0) or y % 400 == 0 else 28
    return 30 if m in (4, 6, 9, 11) else 31


def parse_time(name: str, raw: str | None) -> int | None:
    """Epoch ns of an ISO-8601 date-time or epoch seconds; None when absent."""
    if raw is None:
        return None
    if _EPOCH.match(raw):
        whole, _, frac = raw.partition(".")
        ns = int(whole) * NS + (int(frac.ljust(9, "0")) if frac else 0)
        return min(ns, INT64_MAX)
    m = _DATETIME.match(raw)
    if not m:
        raise BadParam(
            f"{name}: expected an ISO-8601 date-time (2026-11-30T12:00:00Z) or epoch seconds, got {raw!r}"
        )
    y, mo, d = int(m[1]), int(m[2]), int(m[3])
    hh, mm, ss = int(m[4] or 0), int(m[5] or 0), int(m[6] or 0)
    if not (1 <= mo <= 12 and 1 <= d <= _month_days(y, mo) and hh <= 23 and mm <= 59 and ss <= 60):
        raise BadParam(f"{name}: {raw!r} is not a valid date-time")
    frac = m[7] or ""
    ns_frac = int((frac[1:] + "000000000")[:9]) if frac else 0
    offset = 0
    tz = m[8]
    if tz and tz not in "Zz":
        oh, om = int(tz[1:3]), int(tz[4:6])
        if oh > 23 or om > 59:
            raise BadParam(f"{name}: {raw!r} has an invalid UTC offset")
        offset = (oh * 3600 + om * 60) * (1 if tz[0] == "+" else -1)
    seconds = _days_from_civil(y, mo, d) * 86_400 + hh * 3600 + mm * 60 + ss - offset
    ns = seconds * NS + ns_frac
    return max(INT64_MIN, min(ns, INT64_MAX))


def parse_int(name: str, raw: str | None, default: int, lo: int, hi: int) -> int:
    if raw is None:
        return default
    if not _INT.match(raw):
        raise BadParam(f"{name}: expected an integer from {lo} to {hi}, got {raw!r}")
    if len(raw) > MAX_INT_DIGITS:  # int() refuses past 4300 digits; no bound is that long
        raise BadParam(f"{name}: must be from {lo} to {hi}, got {raw[:MAX_INT_DIGITS]}…")
    value = int(raw)
    if not lo <= value <= hi:
        raise BadParam(f"{name}: must be from {lo} to {hi}, got {value}")
    return value


RUN_PAGE_MAX = 5000
"""Most handoffs or spans in one page of a run's detail."""
RUN_HANDOFFS_DEFAULT = 200
RUN_SPANS_DEFAULT = 500
RUN_OFFSET_MAX = 10**9
"""An offset past every row is an empty page, not an error (bounded so it binds)."""


def parse_service(raw: str | None) -> str | None:
    """A service.name to filter on; None (no filter) when absent or empty."""
    if raw is None or raw == "":
        return None
    if len(raw) > MAX_SERVICE_LEN:
        raise BadParam(f"service: at most {MAX_SERVICE_LEN} characters")
    if not _SERVICE.match(raw):
        raise BadParam("service: control characters are not allowed")
    return raw


MAX_TEXT_LEN = 256


def parse_text(name: str, raw: str | None) -> str | None:
    """A free-text search value (run, trace or conversation id, agent name), trimmed; None
    when absent or empty."""
    if raw is None or raw.strip() == "":
        return None
    if len(raw) > MAX_TEXT_LEN:
        raise BadParam(f"{name}: at most {MAX_TEXT_LEN} characters")
    if not _SERVICE.match(raw):
        raise BadParam(f"{name}: control characters are not allowed")
    return raw.strip()


def parse_verdict(raw: str | None) -> str | None:
    if raw is None:
        return None
    if raw not in sc.PRECEDENCE:
        raise BadParam(f"verdict: expected one of {', '.join(sc.PRECEDENCE)}, got {raw!r}")
    return raw


def parse_bool(name: str, raw: str | None) -> bool:
    if raw is None or raw == "false":
        return False
    if raw == "true":
        return True
    raise BadParam(f"{name}: expected true or false, got {raw!r}")


def parse_choice(name: str, raw: str | None, choices: tuple[str, ...]) -> str:
    if raw is None:
        return choices[0]
    if raw not in choices:
        raise BadParam(f"{name}: expected one of {', '.join(choices)}, got {raw!r}")
    return raw


# --- the parsers as field types of the parameter models (models.py) ---------------------


@dataclass(frozen=True)
class Checked:
    """Annotation: validate a query parameter with `parse(name, raw)`, document `schema`.

    `name` is the field's name, which is the parameter's: the sentence of a `BadParam`
    names what the caller wrote. Absent parameters take the field's default without
    being parsed (pydantic does not validate defaults)."""

    parse: Callable[[str, str], Any]
    schema: dict[str, Any] = field(hash=False)

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        parse = self.parse

        def check(raw: Any, info: core_schema.ValidationInfo) -> Any:
            name = info.field_name or "parameter"
            if not isinstance(raw, str):  # only a caller building a model by hand
                raise BadParam(f"{name}: expected text, got {type(raw).__name__}")
            return parse(name, raw)

        return core_schema.with_info_plain_validator_function(check)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return dict(self.schema)


def integer(lo: int, hi: int) -> Checked:
    """An integer from `lo` to `hi`, written in decimal digits (an optional sign)."""
    return Checked(
        lambda name, raw: parse_int(name, raw, lo, lo, hi),
        {"type": "integer", "minimum": lo, "maximum": hi},
    )


def choice(choices: tuple[str, ...]) -> Checked:
    """One of `choices`, exactly."""
    return Checked(
        lambda name, raw: parse_choice(name, raw, choices),
        {"type": "string", "enum": list(choices)},
    )


TEXT_SCHEMA = {"type": "string", "maxLength": MAX_TEXT_LEN, "pattern": SERVICE_PATTERN}
TIME_SCHEMA = {
    "anyOf": [
        {"type": "string", "format": "date-time"},
        {"type": "string", "format": "date"},
        {"type": "string", "pattern": EPOCH_PATTERN},
    ]
}

Service = Annotated[
    str | None,
    Checked(
        lambda name, raw: parse_service(raw),
        {"type": "string", "maxLength": MAX_SERVICE_LEN, "pattern": SERVICE_PATTERN},
    ),
]
"""service.name to filter on; None: every service (absent or empty)."""
Time = Annotated[int | None, Checked(parse_time, TIME_SCHEMA)]
"""Epoch ns of an ISO-8601 date-time or date, or epoch seconds."""
Text = Annotated[str | None, Checked(parse_text, TEXT_SCHEMA)]
"""A search value, trimmed; None when absent or blank."""
Flag = Annotated[bool, Checked(parse_bool, {"type": "boolean"})]
"""`true` or `false`."""
Verdict = Annotated[
    str | None,
    Checked(lambda name, raw: parse_verdict(raw), {"type": "string", "enum": list(sc.PRECEDENCE)}),
]
"""One verdict of docs/architecture.md, Verdicts, by its lower-snake name."""
Limit = Annotated[int, integer(1, MAX_LIMIT)]
PageLimit = Annotated[int, integer(1, RUN_PAGE_MAX)]
PageOffset = Annotated[int, integer(0, RUN_OFFSET_MAX)]
