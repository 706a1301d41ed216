"""The source of an upload: a segment's files as discovery saw them, and whether they still are.

Contract: :func:`check_unchanged` raises :class:`SourceChanged` (reason ``vanished`` or
``changed``: the segment is skipped now and re-planned by the next run) unless the ``.log``
has the size and mtime discovery saw and its successor segment still exists;
:func:`read_companion` reads and checks one companion file (``.index``, ...) into a
:class:`SourceFile`, or None if only that companion is gone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kafka_archive.archive.digests import FileDigest, digest_buffer
from kafka_archive.archive.discovery import LocalFile, SegmentCandidate, SkipReason
from kafka_archive.archive.manifest import FileRole
from kafka_archive.archive.uploader.scan import check_companion
from kafka_archive.errors import InternalSignal

__all__ = ["SourceChanged", "SourceFile", "check_unchanged", "read_companion"]


@dataclass(slots=True)
class SourceFile:
    role: FileRole
    path: Path
    digest: FileDigest
    offset: int
    data: bytes | None  # small files are uploaded from the bytes that were verified


class SourceChanged(InternalSignal):
    def __init__(self, reason: SkipReason, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(detail)


def check_unchanged(c: SegmentCandidate) -> None:
    """Raise :class:`SourceChanged` unless the segment is as discovery saw it: same size and
    mtime, and its successor (the segment at ``end_offset``, which defines its range) still
    there. The successor check catches the log cleaner merging this segment with the next one
    between discovery's listing and its ``stat``: the merged file keeps this segment's name and,
    as Kafka sets it, the newest mtime of the group, so size and mtime of the stat taken after
    the swap match it, while its batches run past ``end_offset`` (seen on a real 4.4 broker)."""
    try:
        st = c.log_path.stat()
    except FileNotFoundError:
        raise SourceChanged(SkipReason.VANISHED, "deleted since discovery") from None
    if (st.st_size, st.st_mtime_ns) != (c.log.size, c.log.mtime_ns):
        raise SourceChanged(
            SkipReason.CHANGED,
            f"size/mtime changed since discovery ({c.log.size} -> {st.st_size} bytes)",
        )
    if not (c.path / f"{c.end_offset:020d}.log").exists():
        raise SourceChanged(
            SkipReason.CHANGED,
            f"the next segment ({c.end_offset}) is gone: merged by the log cleaner since discovery",
        )


def read_companion(c: SegmentCandidate, role: FileRole, lf: LocalFile | None) -> SourceFile | None:
    if lf is None:
        return None
    path = c.path / lf.name
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        check_unchanged(c)  # the whole segment vanished? then say so
        return None  # only the companion is gone (Kafka may delete an empty .txnindex)
    check_companion(role, data, c.base_offset, path)
    return SourceFile(role, path, digest_buffer(data), c.base_offset, data)
