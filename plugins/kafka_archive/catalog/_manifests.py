"""Reading the archive's manifests as :class:`~kafka_archive.catalog.build.SegmentRef` s."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_archive.store import ObjectStore

if TYPE_CHECKING:
    from kafka_archive.catalog.build import SegmentRef


def refs_from_store(store: ObjectStore, cluster: str | None) -> list[SegmentRef]:
    raise NotImplementedError("the archive's manifests are not readable yet")
