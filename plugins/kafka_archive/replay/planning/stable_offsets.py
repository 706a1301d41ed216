"""A partition's last stable offset as a plan source knows it: :class:`StableOffset`, the
:class:`StabilitySource` protocol (the catalog implements it) and :class:`StabilityUnknownError`.

A module of its own, importing nothing of the plan, so that :func:`.plan.build_plan` asks for
the last stable offsets without a circle through :mod:`.stability` (which works on plans).
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable

from kafka_archive.replay.errors import ReplayConfigError

__all__ = ["StabilitySource", "StabilityUnknownError", "StableOffset"]


class StableOffset(NamedTuple):
    """A partition's archived chain: its last stable offset, its end (exclusive) and the open
    transactions as ``(producer_id, first_offset)``."""

    stable_offset: int
    end_offset: int
    open_txns: list[tuple[int, int]]


class StabilityUnknownError(ReplayConfigError):
    """The catalog does not know the partition's last stable offset yet."""

    default_hint = (
        "Run `kafka-archive catalog build` (it reads the transaction markers of the archived "
        "segments once), then try again."
    )


@runtime_checkable
class StabilitySource(Protocol):
    """A plan source that knows each partition's last stable offset (the catalog does)."""

    def stability(self, cluster: str, topic: str, partition: int) -> StableOffset:
        """The partition's LSO. Raises :class:`StabilityUnknownError` when it is not known."""
        ...
