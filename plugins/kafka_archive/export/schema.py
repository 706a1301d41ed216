"""The Parquet schema of an export: one row per record a replay would deliver.

Columns stored in every file (:data:`FILE_SCHEMA`):

==================  ===============================  ==========================================
column              Arrow type                       meaning
==================  ===============================  ==========================================
``topic``           string                           source topic
``topic_id``        string (null)                    Kafka topic id; null: the catalog does not
                                                     record topic ids yet
``partition``       int32                            source partition
``offset``          int64                            the record's offset in the source partition
``timestamp``       timestamp[ms, UTC] (null)        the timestamp a consumer sees (LogAppendTime
                                                     topics: the broker's); null when the record
                                                     has none (magic 0)
``timestamp_type``  string                           ``CreateTime``, ``LogAppendTime`` or
                                                     ``NoTimestamp``
``key``             binary (null)                    the record key, bytes as produced
``value``           binary (null)                    the record value (null: a tombstone)
``headers``         list<struct<name: string,        record headers in order (empty list: none)
                    value: binary>>
``leader_epoch``    int32 (null)                     the batch's partition leader epoch; null
                                                     when unknown (magic 0/1)
``producer_id``     int64 (null)                     the batch's producer id; null for
                                                     non-idempotent producers
==================  ===============================  ==========================================

Partition columns (Hive-style directories ``date=YYYY-MM-DD/hour=HH``, not stored in the files):
``date`` (string, UTC date of ``timestamp``) and ``hour`` (int32, UTC hour 0-23). A record
without a timestamp goes to ``date=__HIVE_DEFAULT_PARTITION__/hour=__HIVE_DEFAULT_PARTITION__``,
the directory name Hive, Spark and pyarrow read as null.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Sequence
from datetime import UTC, datetime

import pyarrow as pa

from segment_lib.records import NO_PRODUCER_ID, BatchHeader, Header, Record

__all__ = [
    "FILE_SCHEMA",
    "MS_PER_HOUR",
    "NULL_PARTITION",
    "SCHEMA_VERSION",
    "Bucket",
    "RowBuffer",
    "bucket_dir",
    "bucket_of",
    "bucket_of_hour",
]

#: bumped when the schema changes (part of the export id: a new schema is a new export)
SCHEMA_VERSION = 1
#: the directory value of a null partition column (Hive's name; Spark and pyarrow read it as null)
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

HEADER_TYPE = pa.struct([pa.field("name", pa.string()), pa.field("value", pa.binary())])

FILE_SCHEMA = pa.schema(
    [
        pa.field("topic", pa.string(), nullable=False),
        pa.field("topic_id", pa.string()),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("timestamp", pa.timestamp("ms", tz="UTC")),
        pa.field("timestamp_type", pa.string(), nullable=False),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("headers", pa.list_(HEADER_TYPE), nullable=False),
        pa.field("leader_epoch", pa.int32()),
        pa.field("producer_id", pa.int64()),
    ]
)

#: ``(date, hour)`` of a record: ``("2024-05-01", 13)``, or ``None`` without a timestamp
Bucket = tuple[str, int] | None

MS_PER_HOUR = 3_600_000


def bucket_of(timestamp_ms: int) -> Bucket:
    """The ``date``/``hour`` partition of a record timestamp (UTC); ``None`` for ``< 0``."""
    return bucket_of_hour(timestamp_ms // MS_PER_HOUR)


@functools.lru_cache(maxsize=4096)
def bucket_of_hour(hour: int) -> Bucket:
    """The bucket of hour number ``hour`` since the epoch (``timestamp // MS_PER_HOUR``);
    ``None`` for negative hours (records without a timestamp)."""
    if hour < 0:
        return None
    dt = datetime.fromtimestamp(hour * 3600, tz=UTC)
    return dt.strftime("%Y-%m-%d"), dt.hour


def bucket_dir(bucket: Bucket) -> str:
    """The Hive-style directory of a bucket: ``date=2024-05-01/hour=13``."""
    if bucket is None:
        return f"date={NULL_PARTITION}/hour={NULL_PARTITION}"
    return f"date={bucket[0]}/hour={bucket[1]:02d}"


class RowBuffer:
    """Rows of one bucket being collected, column by column, into an Arrow table.

    Rows are added a batch's worth at a time (:meth:`add_columns`): the per-batch fields
    (timestamp type, leader epoch, producer id) are repeated, never computed per record, and the
    headers are kept as the decoder's tuples until :meth:`take` flattens them into Arrow arrays.
    """

    __slots__ = (
        "_epoch",
        "_headers",
        "_key",
        "_offset",
        "_pid",
        "_ts",
        "_ts_type",
        "_value",
        "partition",
        "topic",
        "topic_id",
    )

    def __init__(self, topic: str, topic_id: str | None, partition: int) -> None:
        self.topic = topic
        self.topic_id = topic_id
        self.partition = partition
        self._offset: list[int] = []
        self._ts: list[int | None] = []
        self._ts_type: list[str] = []
        self._key: list[bytes | None] = []
        self._value: list[bytes | None] = []
        self._headers: list[Sequence[Header]] = []
        self._epoch: list[int | None] = []
        self._pid: list[int | None] = []

    def __len__(self) -> int:
        return len(self._offset)

    def add(self, record: Record, header: BatchHeader) -> None:
        """Append one record of the batch ``header``."""
        self.add_columns(
            [record.offset], [record.timestamp], [record.key], [record.value], [record.headers],
            header,
        )  # fmt: skip

    def add_columns(
        self,
        offsets: Sequence[int],
        timestamps: Sequence[int],
        keys: Sequence[bytes | None],
        values: Sequence[bytes | None],
        headers: Sequence[Sequence[Header]],
        header: BatchHeader,
    ) -> None:
        """Append records of the batch ``header`` given column by column (equal lengths)."""
        n = len(offsets)
        self._offset.extend(offsets)
        if min(timestamps) < 0:
            self._ts.extend(t if t >= 0 else None for t in timestamps)
        else:
            self._ts.extend(timestamps)
        self._key.extend(keys)
        self._value.extend(values)
        self._headers.extend(headers)
        self._ts_type.extend([header.timestamp_type.label] * n)
        epoch = header.partition_leader_epoch
        self._epoch.extend([epoch if epoch >= 0 else None] * n)
        pid = header.producer_id
        self._pid.extend([pid if pid != NO_PRODUCER_ID and pid >= 0 else None] * n)

    def _headers_array(self) -> pa.Array:
        lengths = [len(h) for h in self._headers]
        offsets = [0, *itertools.accumulate(lengths)]
        names = [h[0] for hs in self._headers for h in hs]
        values = [h[1] for hs in self._headers for h in hs]
        items = pa.StructArray.from_arrays(
            [pa.array(names, pa.string()), pa.array(values, pa.binary())],
            fields=list(HEADER_TYPE),
        )
        return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), items, type=pa.list_(
            HEADER_TYPE
        ))  # fmt: skip

    def take(self) -> pa.Table:
        """The buffered rows as a table of :data:`FILE_SCHEMA` (the buffer is emptied)."""
        n = len(self._offset)
        topic_id = (
            pa.nulls(n, pa.string())
            if self.topic_id is None
            else pa.array([self.topic_id] * n, pa.string())
        )
        table = pa.Table.from_arrays(
            [
                pa.array([self.topic] * n, pa.string()),
                topic_id,
                pa.array([self.partition] * n, pa.int32()),
                pa.array(self._offset, pa.int64()),
                pa.array(self._ts, pa.timestamp("ms", tz="UTC")),
                pa.array(self._ts_type, pa.string()),
                pa.array(self._key, pa.binary()),
                pa.array(self._value, pa.binary()),
                self._headers_array(),
                pa.array(self._epoch, pa.int32()),
                pa.array(self._pid, pa.int64()),
            ],
            schema=FILE_SCHEMA,
        )
        for column in (
            self._offset, self._ts, self._ts_type, self._key, self._value, self._headers,
            self._epoch, self._pid,
        ):  # fmt: skip
            column.clear()
        return table
