"""Segment claims: the store's fence that keeps a partition's fetched segments one chain.

Several fetch archivers may write one partition at once: two processes of a group during a
hand-over, a process that lost its group session but not its store access (a "zombie": paused
by the machine, cut off from the coordinator), or two archivers started for one cluster by
mistake. Group membership (:mod:`~kafka_archive.archive.fetch.group`) keeps that rare; this
module makes it harmless, with nothing but the store's exclusive write
(:meth:`~kafka_archive.store.ObjectStore.put_if_absent`: of writers racing on an absent key
exactly one creates it).

A partition's fetched segments are a chain: each starts where the previous one ends (the
resume point is the newest one's ``end_offset``). Before a segment's manifest is written, its
writer **claims its base offset**: it creates ``<partition>/fetch-claims/<topic id>/<base>.json``
holding the manifest's own bytes. Any two writers of the partition, whatever they believe about
ownership, chain from what the store held when they started, so their segments compete for a
base offset sooner or later; only one claim is created, the other writer gets :class:`Fenced`,
stores nothing more and goes back to the store's resume point. So no offset is archived twice,
and the chain has no hole.

The claim is written after the segment's files and before its manifest: a writer killed between
the two leaves a claim whose manifest is missing, and :func:`follow_claims` (run by every
resume) writes that manifest from the claim's bytes. The manifest stays the one thing readers
use; claims are read only by fetch archivers when they resume. They are a few hundred bytes per
segment and are kept (a deleted claim would reopen its base offset to a zombie).
"""

from __future__ import annotations

import logging
from typing import Final

from kafka_archive.archive.layout import manifest_key, partition_prefix
from kafka_archive.archive.manifest import SegmentManifest, parse_manifest
from kafka_archive.errors import KafkaArchiveError
from kafka_archive.store import IntegrityError, ObjectStore

__all__ = ["CLAIM_DIR", "Fenced", "claim_key", "claim_prefix", "claim_segment", "follow_claims"]

log = logging.getLogger(__name__)

CLAIM_DIR: Final = "fetch-claims"
#: the key segment of a topic without a topic id (brokers before 2.8)
_NO_TOPIC_ID: Final = "no-topic-id"


class Fenced(KafkaArchiveError):
    """Another archiver claimed the segment starting at this base offset first: this writer's
    segment is not stored, and the partition must resume from the store."""

    default_hint = (
        "another fetch archiver writes this partition (a group hand-over, or two archivers of "
        "one cluster): nothing was doubled; it resumes from what the store holds"
    )


def claim_prefix(cluster: str, topic: str, partition: int, topic_id: str | None) -> str:
    """``<partition prefix>fetch-claims/<topic id>/``: one incarnation's claims (a topic deleted
    and created again starts its offsets again under a new id)."""
    return f"{partition_prefix(cluster, topic, partition)}{CLAIM_DIR}/{topic_id or _NO_TOPIC_ID}/"


def claim_key(
    cluster: str, topic: str, partition: int, topic_id: str | None, base_offset: int
) -> str:
    """The key of the claim of the segment starting at ``base_offset``."""
    if base_offset < 0:
        raise ValueError(f"offset {base_offset} is negative")
    return f"{claim_prefix(cluster, topic, partition, topic_id)}{base_offset:020d}.json"


def _same_segment(a: SegmentManifest, b: SegmentManifest) -> bool:
    return a.segment_sha256 == b.segment_sha256 and a.end_offset == b.end_offset


def claim_segment(store: ObjectStore, manifest: SegmentManifest, data: bytes) -> None:
    """Claim ``manifest``'s base offset with ``data`` (the manifest's JSON bytes). Returns when
    the claim is this writer's, or another's for the very same segment (same ``.log`` bytes and
    end: stored either way).

    Raises:
        Fenced: another writer claimed the base offset for another segment.
        StoreError: the store failed (nothing claimed, or a claim with these bytes).
    """
    key = claim_key(
        manifest.cluster, manifest.topic, manifest.partition, manifest.topic_id,
        manifest.base_offset,
    )  # fmt: skip
    try:
        store.put_if_absent(key, data)
    except IntegrityError:
        theirs = parse_manifest(store.get_bytes(key), key=key)
        if not _same_segment(theirs, manifest):
            raise Fenced(
                f"{manifest.topic}-{manifest.partition}: the segment at offset "
                f"{manifest.base_offset} was claimed by another archiver (up to "
                f"{theirs.end_offset}, on {theirs.source.hostname}); this one is not stored"
            ) from None


def follow_claims(
    store: ObjectStore,
    cluster: str,
    topic: str,
    partition: int,
    topic_id: str | None,
    end_offset: int | None,
) -> SegmentManifest | None:
    """The last claimed segment of the chain going on at ``end_offset`` (the newest fetched
    manifest's end; ``None``: no fetched manifest, the chain starts at the lowest claim), each
    claim's missing manifest written on the way; ``None`` when no claim goes on from there.

    Raises:
        StoreError: the store failed.
    """
    if end_offset is None:
        first = next(iter(store.list(claim_prefix(cluster, topic, partition, topic_id))), None)
        if first is None:
            return None
        end_offset = int(first.key.rsplit("/", 1)[1].split(".", 1)[0])
    last: SegmentManifest | None = None
    while True:
        key = claim_key(cluster, topic, partition, topic_id, end_offset)
        if not store.exists(key):
            return last
        data = store.get_bytes(key)
        m = parse_manifest(data, key=key)
        mkey = manifest_key(cluster, topic, partition, m.base_offset, m.segment_sha256)
        # a claim whose .log is gone was pruned with its manifest: not brought back
        if not store.exists(mkey) and store.exists(m.log_file.key):
            store.put_if_absent(mkey, data)
            log.warning(
                "kafka-archive: %s-%d: the manifest of claimed segment %d..%d was missing (its "
                "writer stopped between claim and manifest); written from the claim",
                topic, partition, m.base_offset, m.end_offset,
            )  # fmt: skip
        last = m
        if m.end_offset <= end_offset:  # never expected: a claim always moves the chain on
            return last
        end_offset = m.end_offset
