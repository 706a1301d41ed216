"""Times as on-call engineers type them: ISO-8601, epoch milliseconds, or relative to now.

Accepted forms (all resolved to epoch **milliseconds**, UTC):

* epoch milliseconds: ``1732150000000`` (10-digit values are rejected as ambiguous seconds);
* ISO-8601 with or without a zone: ``2026-11-21T03:00:00Z``, ``2026-11-21 03:00+01:00``,
  ``2026-11-21`` (a naive time means UTC);
* relative: ``-2h``, ``now-30m``, ``now``, ``now+5m``, units ``ms s m h d w``, combinable
  (``-1h30m``).
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

from kafka_archive.errors import KafkaArchiveError

__all__ = ["MAX_MS", "TimeParseError", "format_ms", "now_ms", "parse_time_ms", "resolve_time"]

#: the latest instant :func:`resolve_time` accepts (9999-12-31T23:59:59.999Z)
MAX_MS = 253_402_300_799_999

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}
_RELATIVE = re.compile(r"^(?:now)?\s*(?:(?P<sign>[+-])\s*(?P<amount>(?:\d+(?:ms|s|m|h|d|w))+))?$")
_PART = re.compile(r"(\d+)(ms|s|m|h|d|w)")


class TimeParseError(KafkaArchiveError, ValueError):
    """The text is not a time this module understands; the message lists the accepted forms."""

    http_status = 400
    api_error = "bad_time"


def now_ms() -> int:
    """Wall-clock time now in epoch milliseconds (what every ``*_ms`` time here holds)."""
    return int(time.time() * 1000)


def parse_time_ms(text: str, *, now_ms: int | None = None) -> int:
    """Parse ``text`` into epoch milliseconds (see the module docstring for the forms)."""
    value = text.strip()
    now = int(time.time() * 1000) if now_ms is None else now_ms
    if not value:
        raise TimeParseError(_help("an empty string"))
    if value.isascii() and value.isdigit():  # not "¹" or "٣": int() refuses those
        if len(value) == 10:
            raise TimeParseError(
                f"{value!r} looks like epoch seconds; give epoch milliseconds ({value}000), "
                "an ISO-8601 time or a relative time like -2h"
            )
        return int(value)
    m = _RELATIVE.match(value.lower())
    if m and (value.lower().startswith("now") or m.group("sign")):
        if not m.group("sign"):
            return now
        delta = sum(int(n) * _UNITS_MS[u] for n, u in _PART.findall(m.group("amount")))
        return now - delta if m.group("sign") == "-" else now + delta
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z"))
    except ValueError:
        raise TimeParseError(_help(repr(text))) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def format_ms(ms: int) -> str:
    """ISO-8601 UTC text for epoch ms (``-`` for negative 'no timestamp' values)."""
    if ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")


def resolve_time(text: str, name: str) -> dict[str, object]:
    """``{"input", "ms", "utc"}`` for a time in any form :func:`parse_time_ms` takes, the
    answer the on-call API and the group-offsets DAG give back (``name`` is the field's, for
    the message).

    Raises:
        TimeParseError: unreadable, or outside 1970..9999.
    """
    try:
        ms = parse_time_ms(text)
    except TimeParseError as exc:
        exc.field = name  # the API shows it next to the field
        raise
    if not 0 <= ms <= MAX_MS:
        error = TimeParseError(
            f"{name}: {text!r} is outside 1970-01-01..9999-12-31; give e.g. "
            "2026-11-20T03:00Z, epoch ms, or -2h"
        )
        error.field = name
        raise error
    return {"input": text, "ms": ms, "utc": format_ms(ms)}


def _help(what: str) -> str:
    return (
        f"cannot read {what} as a time; use ISO-8601 (2026-11-21T03:00:00Z, naive = UTC), "
        "epoch milliseconds (1763694000000) or a relative time (-2h, now-30m)"
    )
