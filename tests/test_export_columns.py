"""The compiled column decoder (``segment_lib._columns``) and the export's Arrow row producer
(``kafka_archive.export.columns``) against the Python path.

The Python path is the specification: records decoded by the reference decoder
(``_decode_records_python``) and turned into Arrow columns by ``RowBuffer``. For every input the
compiled decoder must either append exactly the reference's rows (the tables compare equal,
value by value, nulls included) or decline and append nothing, and then only where the
reference raises or holds values no int64 column can. Valid record bytes come from kafka-python's
``DefaultRecordBatchBuilder`` (an encoder not ours) and from tests/test_speedups.py's crafted
encoder (overlong and 70-bit varints, lying lengths), plus random mutations of both.

End to end, :func:`export_partition` over :func:`support.catalog_data.archived_catalog`'s
history (every codec, transactions committed and aborted, control batches, LogAppendTime) must
write the same files with the same rows whichever decoder runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_archive.export.columns import (
    TableBuilder,
    iter_tables,
    split_by_bucket,
    table_from_buffers,
)
from kafka_archive.export.partition import export_partition
from kafka_archive.export.schema import FILE_SCHEMA, RowBuffer, bucket_of
from kafka_archive.replay.execution.reader import PartitionReader
from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, build_plan, parse_position
from kafka_archive.store import open_store
from support.catalog_data import History, archived_catalog
from test_speedups import _apply_mutation, build_with_kafka_python, crafted_record, producer_records

from segment_lib import columns as seg_columns
from segment_lib.compression import Codec
from segment_lib.errors import CorruptRecordError
from segment_lib.record_batch import _decode_records_python
from segment_lib.records import BatchHeader, TimestampType

if not seg_columns.AVAILABLE:  # pragma: no cover - depends on the build
    reason = "segment_lib._columns is not built; `.venv/bin/python setup.py build_ext --inplace`"
    print(reason, file=sys.stderr)
    pytest.skip(reason, allow_module_level=True)

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
Batch = tuple[bytes, int, int, int, int | None, int, int, int]


def header_for(
    count: int, base: int, first_ts: int, append_ts: int | None, ts_type: int, epoch: int, pid: int
) -> BatchHeader:
    return BatchHeader(
        0, 0, 2, base, base + max(count - 1, 0), count, 0, Codec.NONE, TimestampType(ts_type),
        first_ts, first_ts if append_ts is None else append_ts, 0,
        partition_leader_epoch=epoch, producer_id=pid,
    )  # fmt: skip


def reference_table(batches: list[Batch]) -> pa.Table | Exception:
    """The Python path: reference decoder, RowBuffer columns (or what it raised)."""
    buf = RowBuffer("t", None, 3)
    try:
        for data, count, base, first_ts, append_ts, ts_type, epoch, pid in batches:
            records = _decode_records_python(data, count, base, first_ts, append_ts)
            if records:
                offsets, timestamps, keys, values, headers = zip(*records, strict=True)
                header = header_for(count, base, first_ts, append_ts, ts_type, epoch, pid)
                buf.add_columns(offsets, timestamps, keys, values, headers, header)
        return buf.take()
    except (CorruptRecordError, OverflowError, pa.ArrowInvalid) as exc:
        # OverflowError/ArrowInvalid: an offset or timestamp no int64 column holds
        return exc


def compiled_table(batches: list[Batch]) -> tuple[list[int], pa.Table]:
    cols = seg_columns.ColumnBuffers()
    codes = [cols.append_v2(*b) for b in batches]
    hours = cols.hours
    table = table_from_buffers(cols.take(), "t", None, 3)
    table.validate(full=True)
    assert cols.rows == 0 and cols.hours is None  # take() empties
    # the hour range it tracks is that of the rows appended (declined batches left out)
    row_hours = [-1 if ts is None else ts // 3_600_000
                 for ts in table.column("timestamp").cast(pa.int64()).to_pylist()]  # fmt: skip
    assert hours == ((min(row_hours), max(row_hours)) if row_hours else None)
    return codes, table


def plain(table: pa.Table) -> list[dict[str, Any]]:
    """Rows as Python values (timestamps as ints: datetime cannot hold every int64)."""
    ts = table.schema.get_field_index("timestamp")
    return table.set_column(ts, "timestamp", table.column(ts).cast(pa.int64())).to_pylist()


def check(batches: list[Batch]) -> str:
    """Compiled vs reference; returns which way it went (for the tests' own assertions)."""
    expected = reference_table(batches)
    codes, got = compiled_table(batches)
    if all(c == seg_columns.APPENDED for c in codes):
        assert isinstance(expected, pa.Table), expected
        assert got.schema.equals(FILE_SCHEMA)
        assert got.equals(expected)
        assert plain(got) == plain(expected)
        return "appended"
    # declined: only where the Python path fails, and nothing of that batch was appended
    assert set(codes) <= {seg_columns.APPENDED, seg_columns.DECLINED}
    assert isinstance(expected, Exception)
    kept = [b for b, c in zip(batches, codes, strict=True) if c == seg_columns.APPENDED]
    again = reference_table(kept)
    assert isinstance(again, pa.Table) and got.equals(again)
    return "declined"


batch_params = st.tuples(
    st.integers(0, 2**40) | st.sampled_from([0, INT64_MAX - 5]),  # base offset
    st.integers(-5, 2**42) | st.sampled_from([-1, 0, INT64_MAX - 3]),  # first timestamp
    st.none() | st.integers(-2, 2**42),  # LogAppendTime
    st.sampled_from([-1, 0, 1]),
    st.integers(-1, 2**31 - 1),  # leader epoch
    st.integers(-1, 2**62),  # producer id
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(producer_records, batch_params), min_size=1, max_size=4))
def test_records_kafka_python_writes_decode_to_the_reference_rows(
    batches: list[tuple[list[Any], tuple[int, ...]]],
) -> None:
    args: list[Batch] = []
    for records, (base, first_ts, append_ts, ts_type, epoch, pid) in batches:
        data = build_with_kafka_python(records)
        args.append((data, len(records), base, first_ts, append_ts, ts_type, epoch, pid))
    outcome = check(args)
    # everything kafka-python writes is appended unless an offset leaves int64 or a timestamp
    # goes above it (below zero it is null; kafka-python writes deltas from the first record's)
    fits = all(
        INT64_MIN <= base + d <= INT64_MAX
        and (append_ts is not None or first_ts + ts - records[0][1] <= INT64_MAX)
        for records, (base, first_ts, append_ts, *_r) in batches
        for d, ts, *_x in records
    )
    assert outcome == ("appended" if fits else "declined")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(crafted_record(), max_size=5), st.integers(-1, 7), batch_params)
def test_crafted_and_lying_records_decode_or_decline_as_the_reference(
    records: list[bytes], count_delta: int, params: tuple[int, ...]
) -> None:
    data = b"".join(records)
    count = max(0, len(records) + (count_delta if count_delta in (-1, 1) else 0))
    check([(data, count, *params)])  # type: ignore[list-item]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    data = bytearray(build_with_kafka_python(draw(producer_records)))
    for _ in range(draw(st.integers(1, 3))):
        _apply_mutation(draw, data)
    return bytes(data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.integers(0, 14), batch_params)
def test_mutated_bytes_decode_or_decline_as_the_reference(
    data: bytes, count: int, params: tuple[int, ...]
) -> None:
    # a valid batch before the mutated one stays appended (the decline rolls back only its own)
    good = build_with_kafka_python([(0, 5, b"k", b"v", [("h", None)])] * 9)
    check([(good, 9, 0, 0, None, 0, 1, 2), (data, count, *params)])  # type: ignore[list-item]


def test_header_names_must_be_strict_utf8_as_in_the_reference() -> None:
    def record(name: bytes) -> bytes:
        # length, attributes, ts delta, offset delta, key null, value null, 1 header
        body = b"\x00\x00\x00\x01\x01\x02" + bytes([2 * len(name)]) + name + b"\x01"
        return bytes([2 * len(body)]) + body

    for name in [b"ok", "é€𐍈".encode(), b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xff"]:
        outcome = check([(record(name), 1, 0, 0, None, 0, 0, 0)])
        assert outcome == ("appended" if name in (b"ok", "é€𐍈".encode()) else "declined")


def test_split_by_bucket_one_hour_two_hours_and_no_timestamp() -> None:
    h = 3_600_000
    for stamps in ([5 * h, 5 * h + 1, 6 * h - 1], [5 * h, 6 * h, 5 * h + 7], [5 * h, None, 5 * h]):
        ts = pa.array(stamps, pa.int64()).cast(FILE_SCHEMA.field("timestamp").type)
        table = pa.table({"offset": pa.array(range(len(stamps)), pa.int64()), "timestamp": ts})
        buckets = split_by_bucket(table)
        assert sum(t.num_rows for _b, t in buckets) == len(stamps)
        for bucket, part in buckets:
            for ts in part.column("timestamp").cast(pa.int64()).to_pylist():
                assert bucket_of(-1 if ts is None else ts) == bucket
        assert len(buckets) == len({bucket_of(-1 if ts is None else ts) for ts in stamps})


def test_null_bitmaps_across_byte_boundaries_and_many_batches() -> None:
    rows = [(i, 10 * i, None if i % 3 else b"k", None if i % 5 == 0 else b"v" * (i % 7),
             [("a", None), ("b", b"x")] if i % 2 else []) for i in range(37)]  # fmt: skip
    batches: list[Batch] = []
    for start in range(0, 37, 6):
        chunk = [(d - start, *r) for d, *r in rows[start : start + 6]]
        data = build_with_kafka_python(chunk)  # type: ignore[arg-type]
        batches.append((data, len(chunk), start, -1 if start == 12 else 0, None, 0,
                        -1 if start == 6 else 4, -1 if start == 18 else 9))  # fmt: skip
    assert check(batches) == "appended"


# -- end to end over an archive ----------------------------------------------------------------


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str, str]:
    return archived_catalog(tmp_path_factory.mktemp("export-columns"), cluster="east", appends=80)


def _plans(archive: tuple[History, str, str], topic: str, start: str = "earliest") -> Any:
    from kafka_archive.catalog.db import open_catalog

    _hist, _store, db = archive
    with open_catalog(db) as cat:
        spec = ReplaySpec.model_validate(
            {"cluster": "east", "topic": topic, "from": parse_position(start),
             "target": TargetSpec(bootstrap_servers="x:1", name="x")}
        )  # fmt: skip
        return build_plan(spec, CatalogPlanSource(cat, open_store(archive[1]))).partitions


@pytest.mark.parametrize("topic", ["orders", "events"])
def test_row_producer_gives_the_same_tables_either_way(
    archive: tuple[History, str, str], topic: str
) -> None:
    store = open_store(archive[1])
    for plan in _plans(archive, topic):
        got = {}
        for compiled in (True, False):
            reader = PartitionReader(store, plan, raw_batches=compiled)
            tables = list(iter_tables(reader, topic=topic, topic_id="id-1", rows_per_table=50,
                                      compiled=compiled))  # fmt: skip
            assert all(t.schema.equals(FILE_SCHEMA) for t in tables)
            got[compiled] = pa.concat_tables(tables) if tables else None
        assert got[True] is not None and got[True].num_rows > 0
        assert got[True].equals(got[False])
        # the buckets cut the rows as bucket_of cuts them, each in offset order
        table = got[True]
        buckets = split_by_bucket(table)
        assert sum(t.num_rows for _b, t in buckets) == table.num_rows
        for bucket, part in buckets:
            offsets = part.column("offset").to_pylist()
            assert offsets == sorted(offsets)
            for ts in part.column("timestamp").cast(pa.int64()).to_pylist():
                assert bucket_of(-1 if ts is None else ts) == bucket


def test_a_builder_mixes_whole_and_clipped_batches_in_offset_order(
    archive: tuple[History, str, str],
) -> None:
    store = open_store(archive[1])
    plan = _plans(archive, "orders")[1]
    mid = plan.model_copy(update={"start_offset": plan.start_offset + 7})
    reader = PartitionReader(store, mid, raw_batches=True)
    builder = TableBuilder("orders", None, mid.partition)
    kinds = set()
    for group in reader:
        kinds.add(type(group).__name__)
        builder.add(group)
    table = builder.take()
    assert kinds == {"RawBatch", "BatchRecords"}  # the first batch is clipped by the start
    assert table is not None and table.column("offset")[0].as_py() >= mid.start_offset
    reference = TableBuilder("orders", None, mid.partition, compiled=False)
    for group in PartitionReader(store, mid):
        reference.add(group)
    assert table.equals(reference.take())


def test_the_iceberg_producer_is_the_same_rows_either_way(
    archive: tuple[History, str, str],
) -> None:
    """export/batches.py (the Iceberg export's producer) is iter_tables: the same rows as the
    Python path, in the Spark schema, in batches of at most rows_per_batch (a source batch is
    never split by the builder, but the record batches handed to Spark are)."""
    from kafka_archive.export.batches import partition_batches
    from kafka_archive.export.iceberg import SPARK_ARROW_SCHEMA

    store = open_store(archive[1])
    for plan in _plans(archive, "orders"):
        got = {}
        for compiled in (True, False):
            batches = list(partition_batches(plan, store=store, topic="orders", topic_id="id-1",
                                             schema=SPARK_ARROW_SCHEMA, rows_per_batch=7,
                                             compiled=compiled))  # fmt: skip
            assert batches and all(b.schema.equals(SPARK_ARROW_SCHEMA) for b in batches)
            assert max(b.num_rows for b in batches) <= 7
            got[compiled] = pa.Table.from_batches(batches)
        assert got[True].equals(got[False])
        assert set(got[True].column("topic_id").to_pylist()) == {"id-1"}
        reader = PartitionReader(store, plan, raw_batches=False)
        files = pa.concat_tables(list(iter_tables(reader, topic="orders", topic_id="id-1",
                                                  rows_per_table=50, compiled=False)))  # fmt: skip
        assert got[True].equals(files.cast(SPARK_ARROW_SCHEMA))


@pytest.mark.parametrize("write_thread", [True, False])
def test_export_partition_writes_the_same_files_either_way(
    archive: tuple[History, str, str], tmp_path: Path, write_thread: bool
) -> None:
    store = open_store(archive[1])
    for plan in _plans(archive, "orders"):
        files = {}
        for compiled in (True, False):
            out = tmp_path / f"{plan.partition}-{compiled}"
            result = export_partition(
                plan, store=store, output=open_store(str(out)), export_id="e-0123456789abcdef",
                topic="orders", row_group_rows=40, max_rows_per_file=100, compiled=compiled,
                write_thread=write_thread and compiled,
            )  # fmt: skip
            files[compiled] = (
                [f.model_dump(exclude={"sha256", "bytes"}) for f in result.files],
                [pq.read_table(out / "_staging" / "e-0123456789abcdef" / f.key)
                 for f in result.files],
                result.aborted_records, result.control_batches,
            )  # fmt: skip
        (meta_c, tables_c, *counts_c), (meta_p, tables_p, *counts_p) = files[True], files[False]
        assert meta_c == meta_p and counts_c == counts_p and len(meta_c) > 1
        for a, b in zip(tables_c, tables_p, strict=True):
            assert a.equals(b)


def test_taken_tables_stay_intact_while_held_and_their_memory_is_reused_once_dropped() -> None:
    def batch(i: int) -> Batch:
        recs = [(d, 1000 + d, b"k%d" % i, bytes([i % 256]) * (50 + d), [("n", b"%d" % i)])
                for d in range(20)]  # fmt: skip
        return (build_with_kafka_python(recs), 20, 20 * i, 5, None, 0, 1, 2)  # type: ignore[arg-type]

    cols = seg_columns.ColumnBuffers()
    held: list[tuple[int, pa.Table]] = []
    for i in range(12):
        assert cols.append_v2(*batch(i)) == seg_columns.APPENDED
        table = table_from_buffers(cols.take(), "t", None, 3)
        held.append((i, table))
        del table
    # every table still holds its own rows, although 12 takes happened meanwhile
    for i, table in held:
        expected = reference_table([batch(i)])
        assert isinstance(expected, pa.Table) and table.equals(expected)

    def value_address(t: pa.Table) -> int:
        return int(t.column("value").chunk(0).buffers()[2].address)

    held.clear()
    addresses = []
    for i in range(6):  # each table dropped at once: from the third take on, memory comes back
        assert cols.append_v2(*batch(i)) == seg_columns.APPENDED
        table = table_from_buffers(cols.take(), "t", None, 3)
        expected = reference_table([batch(i)])
        assert isinstance(expected, pa.Table) and table.equals(expected)
        addresses.append(value_address(table))
        del table
    assert len(set(addresses[2:])) < len(addresses[2:])


def test_memory_comes_back_while_two_earlier_tables_are_still_held() -> None:
    """The export's writer thread holds two tables (the one it writes, and the previous one's
    rows left over for the next row group) while the next is decoded: the third generation of
    lent buffers is reused then, not fresh memory (a page fault per 4 KiB)."""

    def batch(i: int) -> Batch:
        recs = [
            (d, 1000 + d, b"k%d" % i, bytes([i % 256]) * 5000, [("h", b"x")]) for d in range(40)
        ]
        return (build_with_kafka_python(recs), 40, 40 * i, 5, None, 0, 1, 2)  # type: ignore[arg-type]

    cols = seg_columns.ColumnBuffers()
    held: list[pa.Table] = []
    junk: list[bytearray] = []  # takes any block freed meanwhile: a freed buffer's address
    addresses = []
    for i in range(8):
        assert cols.append_v2(*batch(i)) == seg_columns.APPENDED
        table = table_from_buffers(cols.take(), "t", None, 3)
        assert table.equals(reference_table([batch(i)]))
        addresses.append(int(table.column("value").chunk(0).buffers()[2].address))
        held = [*held[-1:], table]  # the last two stay alive
        del table
        junk.append(bytearray(40 * 5000))
    # a table is made over the buffers the previous take() handed back for filling: from the
    # fifth on, every table is over the memory of an earlier one (with two generations none is)
    assert all(a in addresses[: k + 4] for k, a in enumerate(addresses[4:]))


def test_a_failed_write_in_the_writer_thread_fails_the_export(
    archive: tuple[History, str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_archive.store import LocalStore

    def refuse(*_a: Any, **_k: Any) -> None:
        raise OSError("disk full")

    output = LocalStore(tmp_path / "out")
    monkeypatch.setattr(output, "put_file", refuse)
    plan = _plans(archive, "orders")[0]
    with pytest.raises(OSError, match="disk full"):
        export_partition(plan, store=open_store(archive[1]), output=output,
                         export_id="e-0123456789abcdef", topic="orders", row_group_rows=20,
                         max_rows_per_file=20)  # fmt: skip
