"""One source partition's committed records as Arrow record batches of the export's schema.

:func:`partition_batches` is the row producer of the Iceberg export (each Spark task of
``mapInArrow`` yields its batches to Spark): the records the replay reader delivers for a
partition plan (control batches and aborted transactions left out, nothing at or above the
archive's last stable offset, CRCs checked), in offset order, as
:class:`pyarrow.RecordBatch` es of :data:`~kafka_archive.export.schema.FILE_SCHEMA` (or the
schema given: the same columns, e.g. with microsecond timestamps), at most ``rows_per_batch``
rows each. It is :func:`kafka_archive.export.columns.iter_tables` over a reader of whole raw
batches - the producer the Parquet export writes its files from - so both exports decode in
compiled code (where the extension is built) and give the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from kafka_archive.export.columns import iter_tables
from kafka_archive.export.schema import FILE_SCHEMA
from kafka_archive.replay.execution.reader import PartitionReader
from kafka_archive.replay.planning.plan import PartitionPlan
from kafka_archive.store.base import ObjectStore
from segment_lib import columns as seg_columns

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
    compiled: bool | None = None,
) -> Iterator[pa.RecordBatch]:
    """Yield the plan's committed records as record batches of ``schema`` (see the module
    docstring). ``compiled``: decode whole batches with the compiled decoder (default: when
    built; ``False``: the Python path, same rows).

    Raises:
        SegmentError: bad archived bytes (naming the object and position).
        StoreError: reading the archive failed.
    """
    use_compiled = seg_columns.AVAILABLE if compiled is None else compiled
    reader = PartitionReader(store, plan, raw_batches=use_compiled)
    tables = iter_tables(
        reader, topic=topic, topic_id=topic_id, rows_per_table=rows_per_batch,
        compiled=use_compiled,
    )  # fmt: skip
    for table in tables:
        if schema is not FILE_SCHEMA:
            table = table.cast(schema)
        # a source batch is never split by iter_tables: a table may exceed rows_per_batch
        yield from table.to_batches(max_chunksize=rows_per_batch)
        del table  # dropped before the next is made: the decoder's memory is then reused
