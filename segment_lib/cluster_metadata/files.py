"""Reading the files of a ``__cluster_metadata-0`` directory: log segments and snapshots.

Both are record batches (magic 2). A ``.log`` segment holds the Raft log: metadata record
batches and control batches (LeaderChange at each election, KRaftVersion/Voters). A snapshot,
``<20-digit end offset>-<10-digit epoch>.checkpoint`` (raft ``Snapshots``), holds the state up to
its (exclusive) end offset: a control batch with a SnapshotHeader first, the metadata records in
batches, and a control batch with a SnapshotFooter last (``RecordsSnapshotReader``). Its records
carry offsets 0..n-1 of the snapshot itself, not log offsets. ``bootstrap.checkpoint`` (the
controller's bootstrap metadata) is a snapshot too.

A ``.checkpoint.part`` is a snapshot being written: never read as a snapshot.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from segment_lib.cluster_metadata.codec import decode_metadata_record
from segment_lib.cluster_metadata.model import MetadataEntry
from segment_lib.control import decode_control_record
from segment_lib.errors import SegmentError
from segment_lib.log_file import LogBuffer, open_log

__all__ = [
    "BOOTSTRAP_SNAPSHOT",
    "iter_metadata_buffer",
    "iter_metadata_file",
    "parse_snapshot_name",
]

#: the controller's bootstrap snapshot (kafka-storage format), raft's BINARY_BOOTSTRAP_FILENAME
BOOTSTRAP_SNAPSHOT: Final = "bootstrap.checkpoint"
_SNAPSHOT_NAME: Final = re.compile(r"(?P<offset>[0-9]{20})-(?P<epoch>[0-9]{10})\.checkpoint")
#: the archive's object name of a snapshot: ``<offset>-<epoch>-<sha16>.checkpoint``
_ARCHIVED_SNAPSHOT_NAME: Final = re.compile(
    r"(?P<offset>[0-9]{20})-(?P<epoch>[0-9]{10})-[0-9a-f]{16}\.checkpoint"
)


def parse_snapshot_name(name: str, *, archived: bool = False) -> tuple[int, int] | None:
    """``(end_offset, epoch)`` of a KRaft snapshot file name (with ``archived``: also of the
    archive's ``<offset>-<epoch>-<sha16>.checkpoint``); ``None`` for any other name
    (``.checkpoint.part`` and ``.checkpoint.deleted`` included)."""
    m = _SNAPSHOT_NAME.fullmatch(name)
    if m is None and archived:
        m = _ARCHIVED_SNAPSHOT_NAME.fullmatch(name)
    if m is None:
        return None
    return int(m["offset"]), int(m["epoch"])


def _snapshot_id(name: str) -> str | None:
    if name == BOOTSTRAP_SNAPSHOT:
        return "bootstrap"
    parsed = parse_snapshot_name(name)
    return None if parsed is None else f"{parsed[0]}-{parsed[1]}"


def iter_metadata_buffer(
    log: LogBuffer,
    *,
    include_secrets: bool = False,
    allow_torn_tail: bool = False,
    snapshot_id: str | None = None,
) -> Iterator[MetadataEntry]:
    """Every record of the metadata log bytes in ``log`` (a segment or a snapshot, named by
    ``log.path`` in errors), in order; see :func:`iter_metadata_file`."""
    where = log.path or "<buffer>"
    for batch in log.batches(allow_torn_tail=allow_torn_tail):
        for record in log.records(batch):
            if batch.is_control:
                try:
                    control = decode_control_record(record.key, record.value).type.name
                except SegmentError as exc:  # positions are the key's: name the batch too
                    raise exc.with_location(
                        f"{where} (control record at offset {record.offset} of the batch at "
                        f"byte {batch.position})"
                    ) from None
                yield MetadataEntry(record.offset, record.timestamp, None, control, snapshot_id)
                continue
            decoded = decode_metadata_record(
                record.value or b"",
                where=f"{where} (record at offset {record.offset} of the batch at byte "
                f"{batch.position}; position in the value)",
                include_secrets=include_secrets,
            )
            yield MetadataEntry(record.offset, record.timestamp, decoded, None, snapshot_id)


def iter_metadata_file(
    path: str | os.PathLike[str],
    *,
    include_secrets: bool = False,
    allow_torn_tail: bool = False,
    snapshot_id: str | None = None,
) -> Iterator[MetadataEntry]:
    """Every record of a metadata ``.log`` segment or ``.checkpoint`` snapshot, in file order.

    Metadata records are decoded with
    :func:`~segment_lib.cluster_metadata.codec.decode_metadata_record` (an undecodable one is an
    ``UNKNOWN`` record naming the file, the offset and the byte position; it does not stop the
    read); control records carry their type name in ``control``. ``snapshot_id`` is taken from
    the file name (``<endOffset>-<epoch>``), or given for a file whose name is not a snapshot's
    (an archived copy).

    Raises:
        SegmentError: the batches themselves are damaged (CRC mismatch, corrupt framing), or
            the file ends in an incomplete batch (unless ``allow_torn_tail``: an active
            segment being written), with file and byte position.
        OSError: the file cannot be read.
    """
    p = Path(path)
    sid = snapshot_id if snapshot_id is not None else _snapshot_id(p.name)
    with open_log(p) as log:
        yield from iter_metadata_buffer(
            log, include_secrets=include_secrets, allow_torn_tail=allow_torn_tail, snapshot_id=sid
        )
