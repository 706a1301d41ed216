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

from collections.abc import Iterable
from datetime import UTC, datetime

import pyarrow as pa

from segment_lib.records import NO_PRODUCER_ID, BatchHeader, Record

__all__ = [
    "FILE_SCHEMA",
    "NULL_PARTITION",
    "SCHEMA_VERSION",
    "Bucket",
    "RowBuffer",
    "bucket_dir",
    "bucket_of",
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

_MS_PER_HOUR = 3_600_000


def bucket_of(timestamp_ms: int) -> Bucket:
    """The ``date``/``hour`` partition of a record timestamp (UTC); ``None`` for ``< 0``."""
    if timestamp_ms < 0:
        return None
    hour_start = timestamp_ms - timestamp_ms % _MS_PER_HOUR
    dt = datetime.fromtimestamp(hour_start / 1000, tz=UTC)
    return dt.strftime("%Y-%m-%d"), dt.hour


def bucket_dir(bucket: Bucket) -> str:
    """The Hive-style directory of a bucket: ``date=2024-05-01/hour=13``."""
    if bucket is None:
        return f"date={NULL_PARTITION}/hour={NULL_PARTITION}"
    return f"date={bucket[0]}/hour={bucket[1]:02d}"


class RowBuffer:
    """Rows of one bucket being collected, column by column, into an Arrow table."""

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
        self._headers: list[list[dict[str, object]]] = []
        self._epoch: list[int | None] = []
        self._pid: list[int | None] = []

    def __len__(self) -> int:
        return len(self._offset)

    def add(self, record: Record, header: BatchHeader) -> None:
        """Append one record of the batch ``header``."""
        self._offset.append(record.offset)
        self._ts.append(record.timestamp if record.timestamp >= 0 else None)
        self._ts_type.append(header.timestamp_type.label)
        self._key.append(record.key)
        self._value.append(record.value)
        self._headers.append([{"name": h.key, "value": h.value} for h in record.headers])
        epoch = header.partition_leader_epoch
        self._epoch.append(epoch if epoch >= 0 else None)
        pid = header.producer_id
        self._pid.append(pid if pid != NO_PRODUCER_ID and pid >= 0 else None)

    def add_all(self, records: Iterable[Record], header: BatchHeader) -> None:
        for record in records:
            self.add(record, header)

    def take(self) -> pa.Table:
        """The buffered rows as a table of :data:`FILE_SCHEMA` (the buffer is emptied)."""
        n = len(self._offset)
        table = pa.Table.from_arrays(
            [
                pa.array([self.topic] * n, pa.string()),
                pa.nulls(n, pa.string())
                if self.topic_id is None
                else pa.array([self.topic_id] * n, pa.string()),
                pa.array([self.partition] * n, pa.int32()),
                pa.array(self._offset, pa.int64()),
                pa.array(self._ts, pa.timestamp("ms", tz="UTC")),
                pa.array(self._ts_type, pa.string()),
                pa.array(self._key, pa.binary()),
                pa.array(self._value, pa.binary()),
                pa.array(self._headers, pa.list_(HEADER_TYPE)),
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
