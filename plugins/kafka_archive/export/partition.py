"""One source partition's export: committed records -> Parquet files in the staging prefix.

:func:`export_partition` reads the partition plan with the replay's
:class:`~kafka_archive.replay.execution.reader.PartitionReader` (so the rows are exactly the records
a replay of the same plan delivers: control batches and aborted transactions left out, nothing
at or above the archive's last stable offset - a transaction still open where the archive ends
stops it, see :mod:`kafka_archive.replay.planning.stability` - CRCs checked) and writes them with
pyarrow's Parquet writer (the rows come as Arrow tables from :mod:`.columns`: whole batches
decoded by compiled code straight into Arrow buffers), one file per ``date``/``hour`` bucket
(a bucket with more than ``max_rows_per_file`` rows gets several files; a bucket closed to
bound memory and reopened later gets a new one).
Files are written to a local temporary directory, then uploaded with a SHA-256 check to
``_staging/<export id>/<final key>`` of the output store (see :mod:`.manifest`).

File names are a function of the export id, the partition and a sequence number counted in the
order files are closed: the same plan produces the same names, so a re-run overwrites a failed
attempt's staged files instead of adding to them.

With ``write_thread`` (the default), writing runs in one thread beside the reading: while a
table is encoded, compressed and written, the next one is read and decoded (one write at a
time, in order: the files are those a single thread makes). It pays only with a core to spare
for it: a Spark task gets it only then (:func:`kafka_archive.spark.export.run_export_tasks`).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_archive.export.columns import iter_tables, split_by_bucket
from kafka_archive.export.manifest import ExportFile, staged_key
from kafka_archive.export.schema import FILE_SCHEMA, Bucket, bucket_dir
from kafka_archive.export.values import ValueDecoder, ValueSpec
from kafka_archive.replay.execution.reader import PartitionReader
from kafka_archive.replay.planning.plan import PartitionPlan
from kafka_archive.store.base import ObjectStore
from segment_lib import columns as seg_columns

__all__ = [
    "DEFAULT_MAX_OPEN_FILES",
    "DEFAULT_MAX_ROWS_PER_FILE",
    "DEFAULT_ROW_GROUP_ROWS",
    "PartitionExport",
    "export_partition",
]

#: rows per Parquet row group (and per buffered batch of rows in memory)
DEFAULT_ROW_GROUP_ROWS = 65_536
#: a bucket's file is closed and a new one started past this many rows
DEFAULT_MAX_ROWS_PER_FILE = 2_000_000
#: buckets with an open file per task; the least recently written is closed beyond this
DEFAULT_MAX_OPEN_FILES = 8
COMPRESSION = "zstd"


@dataclass
class PartitionExport:
    """What one partition's export staged, and what the reader skipped."""

    partition: int
    files: list[ExportFile] = field(default_factory=list)
    rows: int = 0
    bytes_read: int = 0
    aborted_records: int = 0
    control_batches: int = 0
    open_txn_records: int = 0
    #: values given a typed column / kept raw only (not decodable; counted, never dropped)
    decoded_values: int = 0
    undecoded_values: int = 0
    #: where the export of the partition stopped (exclusive): the plan's end, or the archive's
    #: last stable offset (a transaction open where the archive ends); -1: not known
    stopped_at: int = -1
    #: wall seconds of the task (reading, converting, writing and staging)
    duration_s: float = 0.0
    #: CPU seconds the task's process used meanwhile (all its threads)
    cpu_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "files": [f.model_dump() for f in self.files],
            "rows": self.rows,
            "bytes_read": self.bytes_read,
            "aborted_records": self.aborted_records,
            "control_batches": self.control_batches,
            "open_txn_records": self.open_txn_records,
            "decoded_values": self.decoded_values,
            "undecoded_values": self.undecoded_values,
            "stopped_at": self.stopped_at,
            "duration_s": self.duration_s,
            "cpu_s": self.cpu_s,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PartitionExport:
        return cls(
            partition=d["partition"],
            files=[ExportFile.model_validate(f) for f in d["files"]],
            rows=d["rows"],
            bytes_read=d["bytes_read"],
            aborted_records=d["aborted_records"],
            control_batches=d["control_batches"],
            open_txn_records=d["open_txn_records"],
            decoded_values=d.get("decoded_values", 0),
            undecoded_values=d.get("undecoded_values", 0),
            stopped_at=d.get("stopped_at", -1),
            duration_s=d["duration_s"],
            cpu_s=d.get("cpu_s", 0.0),
        )


class _OpenFile:
    """One bucket's Parquet file being written locally."""

    def __init__(self, path: Path, bucket: Bucket, schema: pa.Schema) -> None:
        self.path = path
        self.bucket = bucket
        #: rows routed to the file, not written yet (a row group's worth at most)
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.writer = pq.ParquetWriter(path, schema, compression=COMPRESSION)
        self.rows = 0
        self.first_offset = -1
        self.last_offset = -1

    def append(self, table: pa.Table) -> None:
        self.pending.append(table)
        self.pending_rows += table.num_rows

    def flush(self) -> None:
        if self.pending_rows:
            table = self.pending[0] if len(self.pending) == 1 else pa.concat_tables(self.pending)
            self.pending, self.pending_rows = [], 0
            offsets = table.column("offset")
            if self.first_offset < 0:
                self.first_offset = int(offsets[0].as_py())
            self.last_offset = int(offsets[-1].as_py())
            self.rows += table.num_rows
            self.writer.write_table(table)


class _PartitionWriter:
    """Routes rows to their bucket's file; closes and uploads files as they fill."""

    def __init__(
        self,
        *,
        output: ObjectStore,
        export_id: str,
        partition: int,
        tmp: Path,
        row_group_rows: int,
        max_rows_per_file: int,
        max_open_files: int,
        schema: pa.Schema = FILE_SCHEMA,
    ) -> None:
        self.output = output
        self.schema = schema
        self.export_id = export_id
        self.partition = partition
        self.tmp = tmp
        # a file never holds more than max_rows_per_file rows (plus a row group's at most)
        self.row_group_rows = min(row_group_rows, max_rows_per_file)
        self.max_rows_per_file = max_rows_per_file
        self.max_open_files = max_open_files
        self.open: OrderedDict[Bucket, _OpenFile] = OrderedDict()
        self.files: list[ExportFile] = []
        self._seq = 0

    def add(self, table: pa.Table) -> None:
        """Route rows (of any buckets, in offset order) to their buckets' files."""
        for bucket, rows in split_by_bucket(table):
            while rows.num_rows:
                f = self._file_for(bucket)
                # a row group is cut at row_group_rows exactly (slices share the buffers)
                room = self.row_group_rows - f.pending_rows
                f.append(rows.slice(0, room))
                rows = rows.slice(room)
                if f.pending_rows >= self.row_group_rows:
                    f.flush()
                    if f.rows >= self.max_rows_per_file:
                        self._close(f)

    def _file_for(self, bucket: Bucket) -> _OpenFile:
        f = self.open.get(bucket)
        if f is not None:
            self.open.move_to_end(bucket)
            return f
        while len(self.open) >= self.max_open_files:
            _oldest, victim = next(iter(self.open.items()))
            self._close(victim)
        path = self.tmp / f"{len(self.files) + len(self.open)}-{self._seq}.parquet"
        f = _OpenFile(path, bucket, self.schema)
        self.open[bucket] = f
        return f

    def _close(self, f: _OpenFile) -> None:
        f.flush()
        f.writer.close()
        del self.open[f.bucket]
        name = f"part-{self.export_id}-p{self.partition:05d}-{self._seq:05d}.parquet"
        self._seq += 1
        key = f"{bucket_dir(f.bucket)}/{name}"
        digest = hashlib.sha256()
        with open(f.path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
        sha = digest.hexdigest()
        size = f.path.stat().st_size
        self.output.put_file(staged_key(self.export_id, key), f.path, sha256=sha)
        f.path.unlink()
        self.files.append(
            ExportFile(
                key=key,
                partition=self.partition,
                date=None if f.bucket is None else f.bucket[0],
                hour=None if f.bucket is None else f.bucket[1],
                rows=f.rows,
                bytes=size,
                sha256=sha,
                first_offset=f.first_offset,
                last_offset=f.last_offset,
            )
        )

    def close_all(self) -> None:
        # in bucket order, so the names do not depend on which bucket was written last
        for bucket in sorted(self.open, key=lambda b: ("", -1) if b is None else b):
            self._close(self.open[bucket])


def export_partition(
    plan: PartitionPlan,
    *,
    store: ObjectStore,
    output: ObjectStore,
    export_id: str,
    topic: str,
    topic_id: str | None = None,
    row_group_rows: int = DEFAULT_ROW_GROUP_ROWS,
    max_rows_per_file: int = DEFAULT_MAX_ROWS_PER_FILE,
    max_open_files: int = DEFAULT_MAX_OPEN_FILES,
    tmp_dir: str | os.PathLike[str] | None = None,
    compiled: bool | None = None,
    values: ValueSpec | None = None,
    write_thread: bool = True,
) -> PartitionExport:
    """Export one partition plan's committed records to staged Parquet files (see the module
    docstring); returns the files and the reader's counts. ``compiled``: decode whole batches
    with the compiled decoder (default: when built; ``False``: the Python path, same rows).
    ``values``: add the typed value column(s) (:mod:`.values`). ``write_thread``: write in a
    thread beside the reading (see the module docstring; ``False``: all in this thread).

    Raises:
        SegmentError: bad archived bytes (naming the object and position).
        StoreError: reading the archive or writing the output failed.
    """
    started, started_cpu = time.monotonic(), time.process_time()
    result = PartitionExport(partition=plan.partition)
    use_compiled = seg_columns.AVAILABLE if compiled is None else compiled
    decoder = None if values is None else ValueDecoder(values)
    schema = FILE_SCHEMA if decoder is None else pa.schema([*FILE_SCHEMA, *decoder.fields()])
    reader = PartitionReader(store, plan, raw_batches=use_compiled)
    with tempfile.TemporaryDirectory(prefix="kafka-archive-export-", dir=tmp_dir) as tmp:
        writer = _PartitionWriter(
            output=output,
            export_id=export_id,
            partition=plan.partition,
            tmp=Path(tmp),
            row_group_rows=row_group_rows,
            max_rows_per_file=max_rows_per_file,
            max_open_files=max_open_files,
            schema=schema,
        )
        # one writer thread: a table is encoded, compressed and written (pyarrow releases the
        # GIL) while the next is read and decoded; one write at a time, in order, so the files,
        # their rows and names are what a single thread makes
        pool = ThreadPoolExecutor(1, thread_name_prefix="export-write") if write_thread else None
        try:
            # tables of a row group's worth: the writer's buckets then flush as before
            tables = iter_tables(
                reader, topic=topic, topic_id=topic_id, rows_per_table=writer.row_group_rows,
                compiled=use_compiled,
            )  # fmt: skip
            writing: Future[None] | None = None
            while (table := next(tables, None)) is not None:
                if decoder is not None:
                    table = decoder.decode(table)
                if pool is None:
                    writer.add(table)
                    del table  # dropped before the next is made: its memory is then reused
                    continue
                if writing is not None:
                    writing.result()  # a failed write raises here
                writing = pool.submit(writer.add, table)
                del table  # held by the write only: its memory is reused once written
            if writing is not None:
                writing.result()
            writer.close_all()
        finally:
            if pool is not None:
                pool.shutdown(wait=True)  # a running write ends before its files are closed
            for f in list(writer.open.values()):
                f.writer.close()
    stats = reader.stats
    result.files = writer.files
    result.rows = sum(f.rows for f in writer.files)
    result.bytes_read = stats.bytes_read
    result.aborted_records = stats.aborted_records
    result.control_batches = stats.control_batches
    result.open_txn_records = stats.open_txn_records
    if decoder is not None:
        result.decoded_values, result.undecoded_values = decoder.decoded, decoder.undecoded
    result.stopped_at = reader.position
    result.duration_s = round(time.monotonic() - started, 4)
    result.cpu_s = round(time.process_time() - started_cpu, 4)
    return result
