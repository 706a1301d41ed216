"""What the route modules share: settings, Airflow's side, and the two access checks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kafka_archive.settings import Settings
from kafka_archive.timeparse import TimeParseError, format_ms, parse_time_ms
from kafka_archive.ui.access import Principal
from kafka_archive.ui.launcher import Launcher

__all__ = ["MAX_MS", "ApiContext", "resolve_time"]

#: the latest instant the API accepts (9999-12-31T23:59:59.999Z)
MAX_MS = 253_402_300_799_999


@dataclass(frozen=True)
class ApiContext:
    settings: Callable[[], Settings]
    launcher: Launcher
    reader: Callable[..., Awaitable[Principal]]
    trigger: Callable[..., Awaitable[Principal]]


def resolve_time(text: str, name: str) -> dict[str, object]:
    """``{"input", "ms", "utc"}`` for a time in any form the CLI takes.

    Raises:
        TimeParseError: unreadable, or outside 1970..9999 (answered as 400 ``bad_time``).
    """
    ms = parse_time_ms(text)
    if not 0 <= ms <= MAX_MS:
        raise TimeParseError(
            f"{name}: {text!r} is outside 1970-01-01..9999-12-31; give e.g. "
            "2026-11-20T03:00Z, epoch ms, or -2h"
        )
    return {"input": text, "ms": ms, "utc": format_ms(ms)}
