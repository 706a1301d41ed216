"""One end of a replay's range (``--from``/``--to``): a time, an offset for all partitions or
per partition, ``earliest`` or ``latest`` (:class:`Position`), and its parser
(:func:`parse_position`). Re-exported by :mod:`kafka_archive.replay.planning.plan`."""

from __future__ import annotations

import re
from typing import Literal

from kafka_archive.frozen import FrozenModel
from kafka_archive.replay.errors import ReplayConfigError
from kafka_archive.timeparse import TimeParseError, parse_time_ms

__all__ = ["Position", "parse_position"]

_OFFSET_RE = re.compile(r"^offset:(.+)$", re.IGNORECASE)


class Position(FrozenModel):
    """One end of a range: a time, an offset (for all or per partition), earliest or latest."""

    kind: Literal["time", "offset", "earliest", "latest"]
    #: epoch ms for ``time``; the offset for ``offset`` when it applies to every partition
    value: int | None = None
    #: per-partition offsets for ``offset:P=N,...``
    per_partition: dict[int, int] | None = None

    def describe(self) -> str:
        if self.kind == "time":
            from kafka_archive.timeparse import format_ms

            return f"time {format_ms(self.value or 0)}"
        if self.kind == "offset":
            if self.per_partition is not None:
                return "offsets " + ",".join(f"{p}={o}" for p, o in self.per_partition.items())
            return f"offset {self.value}"
        return self.kind


def parse_position(text: str, *, now_ms: int | None = None) -> Position:
    """Parse ``--from``/``--to``: a time (ISO-8601, epoch ms, ``-2h``), ``offset:N``,
    ``offset:P=N,P=N``, ``earliest`` or ``latest``.

    Raises:
        ReplayConfigError: the text is none of these.
    """
    value = text.strip()
    lowered = value.lower()
    if lowered in ("earliest", "latest"):
        return Position(kind=lowered)  # type: ignore[arg-type]
    m = _OFFSET_RE.match(value)
    if m:
        body = m.group(1).strip()
        try:
            if "=" in body:
                per: dict[int, int] = {}
                for part in body.split(","):
                    p, o = part.split("=", 1)
                    per[int(p)] = int(o)
                if any(o < 0 for o in per.values()) or any(p < 0 for p in per):
                    raise ValueError
                return Position(kind="offset", per_partition=per)
            offset = int(body)
            if offset < 0:
                raise ValueError
            return Position(kind="offset", value=offset)
        except ValueError:
            raise ReplayConfigError(
                f"cannot read {text!r} as an offset",
                hint="Use offset:N or offset:P=N,P=N with non-negative integers.",
            ) from None
    try:
        return Position(kind="time", value=parse_time_ms(value, now_ms=now_ms))
    except TimeParseError as exc:
        raise ReplayConfigError(
            str(exc), hint="Or give an offset as offset:N, or earliest/latest."
        ) from None
