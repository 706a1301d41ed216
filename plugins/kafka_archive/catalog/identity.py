"""Identity checks: do an archived object's bytes belong where its manifest says?

Checksums prove that the bytes read are the bytes the manifest describes; they do not prove
that the manifest describes the right bytes. A manifest of partition 1 that points at
partition 2's ``.log`` (with that object's own, correct checksums) passes every checksum, and
serving it would write partition 2's records as partition 1's. So the build checks identity
twice, and an object failing either check is *misfiled*: recorded (see
:mod:`kafka_archive.catalog.problems`), never indexed, never served.

1. :func:`key_mismatch` (before reading the object, from keys and manifest alone): the
   manifest key, the manifest body and the object key (``<cluster>/<topic>/<partition>/
   <baseOffset:020d>-<sha16>.log``, :mod:`kafka_archive.archive.layout`) name the same
   cluster, topic, partition and base offset, and the manifest key's ``sha16`` is that of the
   ``.log`` it lists. (The object key's own ``sha16`` is not compared: the whole-object checksum
   already decides whether the bytes are the ones the manifest recorded.)
2. :func:`content_mismatch` (after the header scan of the bytes): every batch's offsets lie in
   the manifest's range ``[base_offset, end_offset)``; first/last offset, batch and record
   counts equal what the manifest recorded; every batch's partition leader epoch is one the
   manifest recorded.

Both are pure functions returning a human-readable reason, or ``None`` when the identity holds.
A check whose manifest value is unknown (``None``: refs not read from a manifest) is skipped.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final, NamedTuple

from kafka_archive.archive.layout import parse_manifest_key, topic_from_key_segment

if TYPE_CHECKING:
    from kafka_archive.catalog.extract import SegmentStats
    from kafka_archive.catalog.refs import SegmentRef

__all__ = ["LogKey", "content_mismatch", "key_mismatch", "parse_log_key"]

# <cluster>/<topic segment>/<partition>/<20 digits>-<16 hex>.log
_LOG_KEY_RE: Final = re.compile(
    r"(?P<cluster>[^/]+)/(?P<topic>[^/]+)/(?P<partition>[0-9]+)/"
    r"(?P<base>[0-9]{20})-(?P<sha16>[0-9a-f]{16})\.log"
)


class LogKey(NamedTuple):
    """The parts of a ``.log`` object key."""

    cluster: str
    topic: str
    partition: int
    base_offset: int
    sha16: str


def parse_log_key(key: str) -> LogKey | None:
    """Split an archived ``.log`` key into its parts; ``None`` if it is not one."""
    m = _LOG_KEY_RE.fullmatch(key)
    if m is None:
        return None
    return LogKey(
        m["cluster"],
        topic_from_key_segment(m["topic"]),
        int(m["partition"]),
        int(m["base"]),
        m["sha16"],
    )


def _where(cluster: str, topic: str, partition: int, base: int) -> str:
    return f"{cluster}/{topic}/{partition} base offset {base}"


def key_mismatch(ref: SegmentRef) -> str | None:
    """Why the keys of ``ref`` (manifest key, object key) contradict its manifest's body, or
    ``None`` when they agree. A manifest key that is not in the archive's layout (refs built
    by callers) is not compared; an object key that is not is a mismatch."""
    claim = _where(ref.cluster, ref.topic, ref.partition, ref.base_offset)
    mk = parse_manifest_key(ref.manifest_key)
    if mk is not None:
        if (mk.cluster, mk.topic, mk.partition, mk.base_offset) != (
            ref.cluster,
            ref.topic,
            ref.partition,
            ref.base_offset,
        ):
            return (
                f"manifest {ref.manifest_key} is filed under "
                f"{_where(mk.cluster, mk.topic, mk.partition, mk.base_offset)} but describes "
                f"{claim}"
            )
        if ref.sha256 is not None and mk.sha16 != ref.sha256[:16]:
            return (
                f"manifest {ref.manifest_key} is keyed by .log SHA-256 {mk.sha16}... but lists "
                f"a .log with SHA-256 {ref.sha256[:16]}..."
            )
    ok = parse_log_key(ref.object_key)
    if ok is None:
        return f"object key {ref.object_key} is not an archived .log key of {claim}"
    if (ok.cluster, ok.topic, ok.partition, ok.base_offset) != (
        ref.cluster,
        ref.topic,
        ref.partition,
        ref.base_offset,
    ):
        return (
            f"the manifest describes {claim} but its .log object {ref.object_key} belongs to "
            f"{_where(ok.cluster, ok.topic, ok.partition, ok.base_offset)}"
        )
    return None


def content_mismatch(ref: SegmentRef, stats: SegmentStats) -> str | None:
    """Why the batches scanned from ``ref``'s object (``stats``, a whole-object scan) cannot
    be the segment its manifest describes, or ``None``."""
    obj = ref.object_key
    if stats.batch_count:
        if stats.first_offset < ref.base_offset:
            return (
                f"{obj} holds offset {stats.first_offset}, before the manifest's base offset "
                f"{ref.base_offset}"
            )
        if ref.end_offset >= 0 and stats.last_offset >= ref.end_offset:
            return (
                f"{obj} holds offset {stats.last_offset}, outside the manifest's range "
                f"[{ref.base_offset}, {ref.end_offset})"
            )
    for what, claimed, found in (
        ("first offset", ref.first_offset, stats.first_offset),
        ("last offset", ref.last_offset, stats.last_offset),
        ("batch count", ref.batch_count, stats.batch_count),
        ("record count", ref.record_count, stats.record_count),
    ):
        if claimed is not None and claimed != found:
            return f"{obj}: {what} is {found}, the manifest recorded {claimed}"
    if ref.leader_epochs is not None:
        # -1: magic 0/1 batches carry no partition leader epoch (the manifest records none)
        unknown = sorted({run[0] for run in stats.epoch_runs} - set(ref.leader_epochs) - {-1})
        if unknown:
            return (
                f"{obj} holds batches of leader epoch(s) {unknown}, the manifest recorded only "
                f"{sorted(ref.leader_epochs)}"
            )
    return None
