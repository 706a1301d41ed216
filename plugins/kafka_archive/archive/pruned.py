"""The retention watermark of a partition: offsets below it were pruned, never archive them again.

A prune (:mod:`kafka_archive.catalog.prune`) deletes a prefix of a partition's archived
segments. The broker may keep those segments longer than the archive does; without a word the
archiver would find them "not archived" and upload them again, and the next prune would delete
them again. So a prune writes, before it deletes anything, the partition's watermark object
(:func:`~kafka_archive.archive.layout.pruned_marker_key`, beside the manifests)::

    {"kind": "kafka-archive/pruned", "format_version": 1, "pruned_before": 1200,
     "policy": "orders-90d", "pruned_at_ms": 1795641006262}

Every offset below ``pruned_before`` was pruned. The archiver skips a segment whose whole range
``[base_offset, end_offset)`` lies below it (``pruned``); a segment that reaches above it is
archived as usual. The watermark only moves up (:func:`advance_watermark`). Readers of
manifests never see it (its name is not a manifest key).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from kafka_archive.archive.layout import pruned_marker_key
from kafka_archive.store import ObjectStore

__all__ = ["MARKER_KIND", "Watermark", "advance_watermark", "parse_watermark", "read_watermark"]

MARKER_KIND: Final = "kafka-archive/pruned"


@dataclass(frozen=True, slots=True)
class Watermark:
    """Offsets below ``pruned_before`` were pruned by ``policy`` (last at ``pruned_at_ms``)."""

    pruned_before: int
    policy: str
    pruned_at_ms: int

    def to_json_bytes(self) -> bytes:
        doc = {
            "kind": MARKER_KIND,
            "format_version": 1,
            "pruned_before": self.pruned_before,
            "policy": self.policy,
            "pruned_at_ms": self.pruned_at_ms,
        }
        return (json.dumps(doc, indent=2) + "\n").encode()


def parse_watermark(data: bytes) -> Watermark | None:
    """The watermark in ``data``, or ``None`` if it is not one (never raises)."""
    try:
        doc = json.loads(data)
        if doc.get("kind") != MARKER_KIND:
            return None
        return Watermark(int(doc["pruned_before"]), str(doc["policy"]), int(doc["pruned_at_ms"]))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def read_watermark(
    store: ObjectStore, cluster: str, topic: str, partition: int
) -> Watermark | None:
    """The partition's watermark (``None``: nothing pruned, or unreadable)."""
    key = pruned_marker_key(cluster, topic, partition)
    if store.head(key) is None:
        return None
    return parse_watermark(store.get_bytes(key))


def advance_watermark(
    store: ObjectStore, cluster: str, topic: str, partition: int, mark: Watermark
) -> None:
    """Raise the partition's watermark to ``mark`` (a lower ``mark`` changes nothing)."""
    old = read_watermark(store, cluster, topic, partition)
    if old is not None and old.pruned_before >= mark.pruned_before:
        return
    store.put_bytes(pruned_marker_key(cluster, topic, partition), mark.to_json_bytes())
