"""Fuzzing: mutated segments, indexes, checkpoints and metadata files may only ever raise the
typed :class:`SegmentError` tree, never anything else (no IndexError, struct.error, crash).

Seeds are small real broker files from the fixtures plus batches of every codec written by
kafka-python; hypothesis flips, overwrites, truncates and splices their bytes. Logs are read both
with CRC checks (mutations mostly stop there) and without them, so that every decoder below the
CRC (varints, codecs, legacy wrappers, control and __consumer_offsets records) sees garbage too.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from segment_lib.checkpoints import parse_leader_epoch_checkpoint, parse_offset_checkpoint
from segment_lib.consumer_offsets import decode_offsets_record
from segment_lib.control import decode_control_record
from segment_lib.errors import SegmentError
from segment_lib.log_file import LogBuffer
from segment_lib.metadata_files import parse_meta_properties, parse_partition_metadata
from segment_lib.offset_index import parse_offset_index
from segment_lib.producer_snapshot import parse_producer_snapshot
from segment_lib.time_index import parse_time_index
from segment_lib.txn_index import parse_txn_index

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "real-broker-data"


def _synthetic_logs() -> list[bytes]:
    seeds = []
    for codec in range(5):
        b = DefaultRecordBatchBuilder(2, codec, False, -1, -1, -1, 1 << 20)
        for i in range(5):
            b.append(i, 1_700_000_000_000 + i, b"key%d" % i, b"value" * i, [("h", b"x")])
        seeds.append(bytes(b.build()))
    for magic in (0, 1):
        for codec in range(4):
            lb = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
            for i in range(3):
                lb.append(i, 1_500_000_000_000, b"k", b"v%d" % i)
            seeds.append(bytes(lb.build()))
    return seeds


def _fixture_files(pattern: str, limit: int, max_size: int = 64 << 10) -> list[bytes]:
    if not FIXTURES.is_dir():
        return []
    files = sorted(p for p in FIXTURES.rglob(pattern) if 0 < p.stat().st_size <= max_size)
    step = max(1, len(files) // limit)
    return [p.read_bytes() for p in files[::step][:limit]]


def _read_log_once(data: bytes, verify: bool) -> None:
    log = LogBuffer(data, "fuzz.log", verify_crc=verify)
    for batch, record in log.iter_records(allow_torn_tail=True, include_control=True):
        if batch.is_control:
            decode_control_record(record.key, record.value)
        else:
            try:  # most seeds are not __consumer_offsets records: typed errors expected
                decode_offsets_record(record.key, record.value)
            except SegmentError:
                pass


def _read_log(data: bytes) -> None:
    """Read with CRC checks, then again without them (whatever the first pass raised)."""
    first: SegmentError | None = None
    try:
        _read_log_once(data, verify=True)
    except SegmentError as exc:
        first = exc
    _read_log_once(data, verify=False)
    if first is not None:
        raise first


PARSERS: dict[str, tuple[Callable[[bytes], object], list[bytes]]] = {
    "log": (_read_log, _synthetic_logs() + _fixture_files("*.log", 12, 16 << 10)),
    "index": (lambda d: parse_offset_index(d, 0), _fixture_files("*.index", 6)),
    "timeindex": (lambda d: parse_time_index(d, 0), _fixture_files("*.timeindex", 6)),
    "txnindex": (lambda d: parse_txn_index(d, 0), [bytes(34)]),
    "snapshot": (parse_producer_snapshot, _fixture_files("*.snapshot", 6)),
    "offset-checkpoint": (
        parse_offset_checkpoint,
        _fixture_files("replication-offset-checkpoint", 4),
    ),
    "leader-epoch": (parse_leader_epoch_checkpoint, _fixture_files("leader-epoch-checkpoint", 4)),
    "meta.properties": (parse_meta_properties, _fixture_files("meta.properties", 4)),
    "partition.metadata": (parse_partition_metadata, _fixture_files("partition.metadata", 3)),
}


@st.composite
def mutated(draw: st.DrawFn, seeds: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "overwrite", "truncate", "insert", "int"]))
        pos = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif op == "overwrite":
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[pos : pos + len(chunk)] = chunk
        elif op == "truncate":
            del data[pos:]
        elif op == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=16))
        elif op == "int" and len(data) >= 4:
            value = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000]))
            data[pos : pos + 4] = value.to_bytes(4, "big")
    return bytes(data)


@pytest.mark.parametrize("kind", sorted(PARSERS))
def test_mutated_inputs_raise_only_typed_segment_errors(kind: str) -> None:
    parse, seeds = PARSERS[kind]
    if not seeds:
        pytest.skip(f"no seed files for {kind} (fixtures absent at {FIXTURES})")
    for seed in seeds:  # the unmutated seeds are valid
        parse(seed)

    @settings(
        max_examples=1500 if kind == "log" else 300,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(mutated(seeds))
    def check(data: bytes) -> None:
        try:
            parse(data)
        except SegmentError as exc:
            assert exc.position is None or exc.position >= 0
            assert str(exc)

    check()


def test_random_bytes_as_a_log_raise_only_typed_errors() -> None:
    @settings(max_examples=300, deadline=None, derandomize=True)
    @given(st.binary(min_size=0, max_size=300))
    def check(data: bytes) -> None:
        try:
            _read_log(data)
        except SegmentError:
            pass

    check()
