"""The verifying scan of a segment before it is uploaded: every batch, and its companions.

Contract: :func:`scan_log` reads a rolled ``.log`` through ``segment_lib`` and checks every
batch's CRC (CRC-32C for magic 2, CRC-32 before) and structure, with no torn tail allowed and
every batch inside ``[base_offset, end_offset)``, collecting what the manifest records
(:class:`LogScan`) and the file's digest; :func:`check_companion` parses an ``.index``,
``.timeindex`` or ``.txnindex``. Both raise :class:`~segment_lib.errors.SegmentError` naming
the file and byte position: the segment then goes to quarantine.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import crc32c

from kafka_archive.archive.digests import FileDigest, digest_buffer
from segment_lib.errors import CorruptBatchError, SegmentError
from segment_lib.log_file import open_log
from segment_lib.offset_index import parse_offset_index
from segment_lib.record_batch import first_record_timestamp
from segment_lib.time_index import parse_time_index
from segment_lib.txn_index import parse_txn_index

__all__ = ["LogScan", "check_companion", "scan_log"]

_HASH_BLOCK: Final = 1 << 20


@dataclass(slots=True)
class LogScan:
    """What the verifying scan of a ``.log`` found."""

    digest: FileDigest
    batch_count: int = 0
    record_count: int = 0
    first_offset: int = -1
    last_offset: int = -1
    first_timestamp: int = -1
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1
    magics: set[int] = field(default_factory=set)
    codecs: set[str] = field(default_factory=set)
    transactional_batches: int = 0
    control_batches: int = 0
    leader_epochs: set[int] = field(default_factory=set)

    def manifest_fields(self) -> dict[str, Any]:
        """The segment manifest's fields this scan found (offsets, counts, timestamps, codecs,
        the batches' leader epochs, the ``.log``'s SHA-256), for
        :class:`~kafka_archive.archive.manifest.SegmentManifest`; both archivers (disk and
        fetch) describe their segments with them."""
        return {
            "first_offset": self.first_offset,
            "last_offset": self.last_offset,
            "batch_count": self.batch_count,
            "record_count": self.record_count,
            "first_timestamp": self.first_timestamp,
            "max_timestamp": self.max_timestamp,
            "offset_of_max_timestamp": self.offset_of_max_timestamp,
            "magics": sorted(self.magics),
            "codecs": sorted(self.codecs),
            "transactional_batches": self.transactional_batches,
            "control_batches": self.control_batches,
            "batch_leader_epochs": sorted(self.leader_epochs),
            "segment_sha256": self.digest.sha256,
        }


def scan_log(
    path: str | os.PathLike[str],
    base_offset: int,
    end_offset: int,
    *,
    expected_sha256: str | None = None,
) -> LogScan:
    """Verify every batch of a rolled ``.log`` and digest its bytes while they are mapped.

    With ``expected_sha256`` the SHA-256 is not computed here: the caller hands it to the store,
    which hashes the bytes it uploads anyway and refuses them if they differ, so a third SHA-256
    pass over the segment (after discovery's and the store's) would add nothing. The CRC-32C of
    the whole file is always computed (hardware CRC: far cheaper than SHA-256).

    Raises a :class:`~segment_lib.errors.SegmentError` naming the file and byte position for a
    CRC mismatch, a malformed or torn batch, or a batch outside ``[base_offset, end_offset)``.
    """
    with open_log(path) as logbuf:
        scan = LogScan(digest=FileDigest(0, "", ""))
        for b in logbuf.batches(allow_torn_tail=False):
            if b.last_offset < base_offset or b.last_offset >= end_offset:
                raise CorruptBatchError(
                    f"batch ending at offset {b.last_offset} lies outside the segment's range "
                    f"[{base_offset}, {end_offset})",
                    path=logbuf.path,
                    position=b.position,
                    expected=f"offsets in [{base_offset}, {end_offset})",
                )
            if scan.first_offset < 0:
                # the first record's time, not a cleaner's delete horizon (KIP-534)
                scan.first_offset = b.base_offset
                scan.first_timestamp = first_record_timestamp(logbuf.data, b)
            scan.last_offset = b.last_offset
            scan.batch_count += 1
            scan.record_count += b.record_count
            scan.transactional_batches += b.is_transactional
            scan.control_batches += b.is_control
            scan.magics.add(b.magic)
            scan.codecs.add(b.codec.label)
            if b.magic >= 2 and b.partition_leader_epoch >= 0:
                scan.leader_epochs.add(b.partition_leader_epoch)
            if b.max_timestamp > scan.max_timestamp:
                scan.max_timestamp, scan.offset_of_max_timestamp = b.max_timestamp, b.last_offset
        # The mapped pages are hot from the scan: hashing them now costs no second disk read.
        if expected_sha256 is None:
            scan.digest = digest_buffer(logbuf.data)
        else:
            crc = 0
            data = logbuf.data
            for start in range(0, len(data), _HASH_BLOCK):
                crc = crc32c.crc32c(data[start : start + _HASH_BLOCK], crc)
            scan.digest = FileDigest(len(data), expected_sha256, f"{crc:08x}")
    return scan


def check_companion(role: str, data: bytes, base_offset: int, path: Path) -> None:
    try:
        if role == "index":
            parse_offset_index(data, base_offset)
        elif role == "timeindex":
            parse_time_index(data, base_offset)
        elif role == "txnindex":
            parse_txn_index(data, base_offset)
    except SegmentError as exc:
        raise exc.with_location(path) from None
