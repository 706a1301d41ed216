"""Magic-2 records decoded straight into column buffers laid out as Apache Arrow arrays.

For exporters that write columnar files: instead of one :class:`~segment_lib.records.Record`
per record (and Python lists turned into columns afterwards), :func:`append_batch_v2` has the
compiled :class:`ColumnBuffers` (``segment_lib/_columns.c``) decode a batch's records into
growable buffers - offsets, timestamps, keys, values, headers, the batch's timestamp type,
leader epoch and producer id per record - that :meth:`ColumnBuffers.take` hands over as
``bytearray`` s in Arrow's memory layout (the column list and layout are in ``_columns.c``).
This module knows bytes only; turning the buffers into pyarrow arrays is the caller's
(``kafka_archive.export.columns``).

The compiled decoder is stricter than the reference decoder (``decode_batch``), never looser:
where it declines a batch (:data:`DECLINED`: bad bytes, values int64 cannot hold), nothing was
appended and the caller decodes the batch the reference way, which raises the reference's
error (naming file and byte position) or returns the reference's records. Without a C compiler
the extension is absent (:data:`AVAILABLE` false) and callers take the reference path only.
"""

from __future__ import annotations

from segment_lib.errors import SegmentError
from segment_lib.record_batch import records_section
from segment_lib.records import BatchHeader

__all__ = ["APPENDED", "AVAILABLE", "DECLINED", "FULL", "ColumnBuffers", "append_batch_v2"]

#: what :func:`append_batch_v2` returns: the records were appended
APPENDED = 1
#: nothing appended: decode the batch the reference way (it raises, or returns the records)
DECLINED = 0
#: nothing appended: an int32 offset of a column would overflow; take() the buffers, append again
FULL = -1

try:
    from segment_lib._columns import ColumnBuffers

    AVAILABLE = True
except ImportError:  # pragma: no cover - depends on the build
    ColumnBuffers = None  # type: ignore[assignment,misc]
    AVAILABLE = False


def append_batch_v2(buffers: ColumnBuffers, buf: bytes | memoryview, header: BatchHeader) -> int:
    """Append the records of the magic-2 batch ``header`` of ``buf`` (decompressing them if
    needed; the CRC is not checked here) to ``buffers``: :data:`APPENDED`, :data:`DECLINED`
    (a payload that does not decompress too) or :data:`FULL`; nothing is appended unless
    :data:`APPENDED`."""
    try:
        data, log_append_ts = records_section(buf, header)
    except SegmentError:
        return DECLINED  # the reference decode raises it again, located
    return buffers.append_v2(
        data,
        header.record_count,
        header.base_offset,
        header.first_timestamp,
        log_append_ts,
        int(header.timestamp_type),
        header.partition_leader_epoch,
        header.producer_id,
    )
