"""One source partition's committed records as Arrow record batches of the export's schema.

:func:`partition_batches` is the row producer of the Iceberg export (each Spark task of
``mapInArrow`` yields its batches to Spark): the records the replay reader delivers for a
partition plan (control batches and aborted transactions left out, nothing at or above the
archive's last stable offset, CRCs checked), in offset order, as
:class:`pyarrow.RecordBatch` es of :data:`~kafka_archive.export.schema.FILE_SCHEMA` (or the
schema given: the same columns, e.g. with microsecond timestamps), at most ``rows_per_batch``
rows each. The Parquet export builds its files from the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from kafka_archive.export.schema import FILE_SCHEMA, RowBuffer
from kafka_archive.replay.execution.reader import BatchRecords, PartitionReader
from kafka_archive.replay.planning.plan import PartitionPlan
from kafka_archive.store.base import ObjectStore

__all__ = ["DEFAULT_ROWS_PER_BATCH", "partition_batches"]

DEFAULT_ROWS_PER_BATCH = 65_536


def partition_batches(
    plan: PartitionPlan,
    *,
    store: ObjectStore,
    topic: str,
    topic_id: str | None = None,
    schema: pa.Schema = FILE_SCHEMA,
    rows_per_batch: int = DEFAULT_ROWS_PER_BATCH,
) -> Iterator[pa.RecordBatch]:
    """Yield the plan's committed records as record batches of ``schema`` (see the module
    docstring).

    Raises:
        SegmentError: bad archived bytes (naming the object and position).
        StoreError: reading the archive failed.
    """
    reader = PartitionReader(store, plan)
    buffer = RowBuffer(topic, topic_id, plan.partition)

    def take() -> Iterator[pa.RecordBatch]:
        table = buffer.take()
        if schema is not FILE_SCHEMA:
            table = table.cast(schema)
        yield from table.to_batches()

    for group in reader:
        assert isinstance(group, BatchRecords)  # the reader decodes (no raw batches)
        if not group:
            continue
        offsets, timestamps, keys, values, headers = zip(*group, strict=True)
        buffer.add_columns(offsets, timestamps, keys, values, headers, group.header)
        if len(buffer) >= rows_per_batch:
            yield from take()
    if len(buffer):
        yield from take()
