"""The export's row producer: the replay reader's groups as Arrow tables of :data:`FILE_SCHEMA`.

:class:`TableBuilder` collects what a :class:`~kafka_archive.replay.execution.reader.
PartitionReader` yields, in offset order, and hands it over as ``pa.Table`` s:

* a :class:`~kafka_archive.replay.execution.reader.RawBatch` (a whole committed magic-2 batch,
  undecoded) is decoded by the compiled :mod:`segment_lib.columns` straight into Arrow buffers,
  which :func:`table_from_buffers` wraps with ``pa.Array.from_buffers`` (no Python object per
  record, no copy of the buffers);
* anything else - a decoded group (a batch clipped by the range, magic 0/1 messages), a batch
  the compiled decoder declines, or every group when the extension is not built - goes through
  :class:`~kafka_archive.export.schema.RowBuffer`, the Python path; a batch the compiled decoder
  declines is decoded the reference way first, which raises the reference's error for bad
  bytes.

Both paths give the same rows (tests/test_export_columns.py compares them). :func:`iter_tables`
is the producer other writers (Parquet files, Iceberg tables) consume; :func:`split_by_bucket`
cuts a table into its ``date``/``hour`` buckets.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from kafka_archive.export.schema import (
    FILE_SCHEMA,
    HEADER_TYPE,
    MS_PER_HOUR,
    Bucket,
    RowBuffer,
    bucket_of_hour,
)
from kafka_archive.replay.execution.reader import BatchRecords, Group, PartitionReader, RawBatch
from segment_lib import columns as seg_columns

__all__ = [
    "TableBuilder",
    "iter_tables",
    "split_by_bucket",
    "table_from_buffers",
]

_TS_TYPE = FILE_SCHEMA.field("timestamp").type
#: timestamp type + 1 -> label (the codes ColumnBuffers stores)
_TS_TYPE_LABELS = pa.array(["NoTimestamp", "CreateTime", "LogAppendTime"], pa.string())
_HEADERS_TYPE = pa.list_(HEADER_TYPE)
_INT32 = struct.Struct("<i")
#: a compiled decoder no builder uses, kept for the next builder of this process (a Spark
#: Python worker runs task after task): its buffers' memory is reused, where fresh memory costs
#: a page fault per 4 KiB on first touch - about as much as the decoding itself. At most one is
#: kept (a few row groups' worth of memory).
_idle: list[seg_columns.ColumnBuffers] = []
#: (type, value) -> a long array of that value: the repeated columns of every table are slices
#: of it (building a repeated string column costs ~0.15 ms per 66k rows; a slice nothing)
_repeats: dict[tuple[str, object], pa.Array] = {}


def _repeated(value: pa.Scalar, n: int) -> pa.Array:
    """``pa.repeat(value, n)``, as a zero-copy slice of an array kept for the next table."""
    key = (str(value.type), value.as_py())
    arr = _repeats.get(key)
    if arr is None or len(arr) < n:
        if len(_repeats) >= 16:  # a worker exporting many topics: keep a few
            _repeats.clear()
        # room for the next tables, which are about as long (a source batch is never split)
        arr = _repeats[key] = pa.repeat(value, n + n // 4)
    return arr.slice(0, n)


def table_from_buffers(
    parts: dict[str, memoryview | int], topic: str, topic_id: str | None, partition: int
) -> pa.Table:
    """A table of :data:`FILE_SCHEMA` over the buffers of ``ColumnBuffers.take()`` (wrapped,
    not copied)."""
    n = int(parts["rows"])
    entries = int(parts["header_entries"])

    def buf(name: str) -> pa.Buffer:
        return pa.py_buffer(parts[name])

    def binary(prefix: str, nulls: str, count: int, type_: pa.DataType) -> pa.Array:
        null_count = int(parts[nulls]) if nulls else 0
        validity = buf(f"{prefix}_valid") if null_count else None
        return pa.Array.from_buffers(
            type_, count, [validity, buf(f"{prefix}_offsets"), buf(f"{prefix}_data")],
            null_count=null_count,
        )  # fmt: skip

    def fixed(name: str, type_: pa.DataType) -> pa.Array:
        null_count = int(parts[f"{name}_nulls"])
        validity = buf(f"{name}_valid") if null_count else None
        return pa.Array.from_buffers(type_, n, [validity, buf(name)], null_count=null_count)

    names = binary("header_name", "", entries, pa.string())
    values = binary("header_value", "header_value_nulls", entries, pa.binary())
    items = pa.StructArray.from_arrays([names, values], fields=list(HEADER_TYPE))
    headers = pa.Array.from_buffers(
        _HEADERS_TYPE, n, [None, buf("header_offsets")], children=[items]
    )
    types = int(parts["timestamp_types"])
    if types and types & (types - 1) == 0:  # one timestamp type (as usual): a repeated label
        ts_type = _repeated(_TS_TYPE_LABELS[types.bit_length() - 1], n)
    else:
        codes = pa.Array.from_buffers(pa.uint8(), n, [None, buf("timestamp_type")])
        ts_type = _TS_TYPE_LABELS.take(codes)
    return pa.Table.from_arrays(
        [
            _repeated(pa.scalar(topic, pa.string()), n),
            _repeated(pa.scalar(topic_id, pa.string()), n),
            pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(_INT32.pack(partition) * n)]),
            pa.Array.from_buffers(pa.int64(), n, [None, buf("offset")]),
            fixed("timestamp", _TS_TYPE),
            ts_type,
            binary("key", "key_nulls", n, pa.binary()),
            binary("value", "value_nulls", n, pa.binary()),
            headers,
            fixed("leader_epoch", pa.int32()),
            fixed("producer_id", pa.int64()),
        ],
        schema=FILE_SCHEMA,
    )


class TableBuilder:
    """Rows of one source partition collected in offset order (see the module docstring).

    Args:
        compiled: decode whole batches with the compiled decoder (default: when it is built);
            ``False`` takes the Python path for everything (the reference, for tests).
    """

    def __init__(
        self, topic: str, topic_id: str | None, partition: int, *, compiled: bool | None = None
    ) -> None:
        self.topic, self.topic_id, self.partition = topic, topic_id, partition
        use = seg_columns.AVAILABLE if compiled is None else compiled
        if use and not seg_columns.AVAILABLE:
            raise RuntimeError("segment_lib._columns is not built (no C compiler at install)")
        self._cols = (_idle.pop() if _idle else seg_columns.ColumnBuffers()) if use else None
        self._rows = RowBuffer(topic, topic_id, partition)
        self._chunks: list[pa.Table] = []
        self._chunk_rows = 0

    @property
    def compiled(self) -> bool:
        """Whether whole batches are decoded by the compiled decoder."""
        return self._cols is not None

    def __len__(self) -> int:
        return self._chunk_rows + len(self._rows) + (self._cols.rows if self._cols else 0)

    def add(self, group: Group) -> None:
        """Append a reader group's records (after every row added before)."""
        if isinstance(group, RawBatch):
            if self._cols is not None:
                if len(self._rows):
                    self._seal_rows()
                rc = seg_columns.append_batch_v2(self._cols, group.view, group.header)
                if rc == seg_columns.FULL and self._cols.rows:
                    self._seal_cols()
                    rc = seg_columns.append_batch_v2(self._cols, group.view, group.header)
                if rc == seg_columns.APPENDED:
                    return
            # declined (or no compiled decoder): the reference decode raises for bad bytes
            group = BatchRecords(group.records(), group.header)
        if not group:
            return
        if self._cols is not None and self._cols.rows:
            self._seal_cols()
        assert isinstance(group, BatchRecords)  # the reader's decoded groups carry the header
        offsets, timestamps, keys, values, headers = zip(*group, strict=True)
        self._rows.add_columns(offsets, timestamps, keys, values, headers, group.header)

    def _seal_cols(self) -> None:
        assert self._cols is not None
        self._push(table_from_buffers(self._cols.take(), self.topic, self.topic_id,
                                      self.partition))  # fmt: skip

    def _seal_rows(self) -> None:
        self._push(self._rows.take())

    def _push(self, table: pa.Table) -> None:
        self._chunks.append(table)
        self._chunk_rows += table.num_rows

    def close(self) -> None:
        """Give the compiled decoder back for reuse (rows not taken are dropped)."""
        cols, self._cols = self._cols, None
        if cols is not None and not _idle:
            if cols.rows:
                cols.take()
            _idle.append(cols)

    def take(self) -> pa.Table | None:
        """Every row collected so far as one table (``None``: none); the builder is emptied."""
        if len(self._rows):
            self._seal_rows()
        if self._cols is not None and self._cols.rows:
            self._seal_cols()
        if not self._chunks:
            return None
        table = self._chunks[0] if len(self._chunks) == 1 else pa.concat_tables(self._chunks)
        self._chunks, self._chunk_rows = [], 0
        return table


def iter_tables(
    reader: PartitionReader,
    *,
    topic: str,
    topic_id: str | None,
    rows_per_table: int,
    compiled: bool | None = None,
) -> Iterator[pa.Table]:
    """The reader's records as tables of :data:`FILE_SCHEMA` in offset order, each of about
    ``rows_per_table`` rows (a source batch is never split; the last table may be smaller).
    Make the reader with ``raw_batches=True`` for the compiled path to see whole batches.
    A consumer that drops each table before asking for the next lets the compiled decoder
    reuse the table's memory (fresh memory costs a page fault per 4 KiB on first touch)."""
    builder = TableBuilder(topic, topic_id, reader.plan.partition, compiled=compiled)
    try:
        for group in reader:
            builder.add(group)
            if len(builder) >= rows_per_table:
                table = builder.take()
                if table is not None:
                    yield table
                    # not held while the next table is made: its memory is reused once the
                    # consumer drops it too (ColumnBuffers.take)
                    del table
        table = builder.take()
        if table is not None:
            yield table
    finally:
        builder.close()


def split_by_bucket(table: pa.Table) -> list[tuple[Bucket, pa.Table]]:
    """``table`` cut into its ``date``/``hour`` buckets (rows without a timestamp: ``None``), in
    the order each bucket first appears, each keeping the rows' order."""
    ts = table.column("timestamp").cast(pa.int64())
    if ts.null_count == 0 and len(ts):
        # the usual case in one pass instead of three: every row in one hour (the hour is
        # monotone in the timestamp; a negative one takes the general path's rounding)
        lo_hi = pc.min_max(ts)
        lo_ts, hi_ts = lo_hi["min"].as_py(), lo_hi["max"].as_py()
        if lo_ts >= 0 and lo_ts // MS_PER_HOUR == hi_ts // MS_PER_HOUR:
            return [(bucket_of_hour(lo_ts // MS_PER_HOUR), table)]
    hours = pc.fill_null(pc.divide(ts, MS_PER_HOUR), -1)
    lo_hi = pc.min_max(hours)
    lo, hi = lo_hi["min"].as_py(), lo_hi["max"].as_py()
    if lo == hi:
        return [(bucket_of_hour(lo), table)]
    out: list[tuple[Bucket, pa.Table]] = []
    by_bucket: dict[Bucket, list[int]] = {}
    for hour in pc.unique(hours).to_pylist():
        by_bucket.setdefault(bucket_of_hour(hour), []).append(hour)
    for bucket, bucket_hours in by_bucket.items():
        mask = pc.is_in(hours, pa.array(bucket_hours, pa.int64()))
        out.append((bucket, table.filter(mask)))
    return out
