"""The canonical chain's view of a cataloged segment row (:func:`version_of_segment`).

Shared by the build, which recomputes a partition's chain over old and new versions
(:mod:`kafka_archive.catalog.plan`), and the read side, which reports holes and overlaps from
the rows (:mod:`kafka_archive.catalog.coverage`): neither imports the other for it.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from sqlalchemy import Row

from kafka_archive.catalog.chain import Version

if TYPE_CHECKING:
    from kafka_archive.catalog.models import Segment

__all__ = ["version_of_segment"]


def _runs(text: str) -> tuple[tuple[int, int, int], ...]:
    return tuple((int(a), int(b), int(c)) for a, b, c in json.loads(text or "[]"))


def version_of_segment(s: Segment | Row[Any]) -> Version:
    """The chain's view of a cataloged segment row (an ORM object, or a row of columns with
    the same names: :data:`kafka_archive.catalog.coverage.SEGMENT_COLUMNS`)."""
    return Version(
        s.id,
        s.first_offset,
        s.last_offset,
        s.archived_at_ms,
        s.broker_id if s.broker_id is not None else -1,
        s.manifest_key,
        s.base_offset,
        s.end_offset,
        _runs(s.epoch_runs),
    )
