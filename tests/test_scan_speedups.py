"""The compiled batch scan (``segment_lib._speedups.scan_batches_v2``) and its CRC-32C.

The pure-Python loop of :func:`segment_lib.log_file.iter_batches` is the specification: with
the compiled scan switched in (the default) it must yield the same ``BatchHeader`` sequence,
field by field and type by type, and then raise the same typed error (type, position, detail,
expectation, stored/computed CRC) as with the scan switched off, on every input: segments of
valid magic-2 batches written by kafka-python (an independent encoder) and by our writer,
control batches, legacy messages interleaved (the scan must hand them over and take over again),
hand-made headers with arbitrary field values, torn tails, zero-filled tails, garbage,
random byte mutations and CRC mismatches, at arbitrary start/end positions.

The CRC-32C written in C (three implementations) is checked against the ``crc32c`` package, an
independent implementation, on random buffers of every length and alignment, and against the
published check values of RFC 3720.

When the extension did not build (no C compiler), the whole module is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import random
import struct
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from crc32c import crc32c as crc32c_reference
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kafka_archive_dev.writer.encode import (
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
    encode_legacy_batches,
)

from segment_lib import legacy, log_file
from segment_lib.compression import Codec
from segment_lib.control import ControlType
from segment_lib.errors import (
    CorruptBatchError,
    CrcMismatchError,
    SegmentError,
    TornTailError,
)
from segment_lib.log_file import LogBuffer, iter_batches, open_log
from segment_lib.record_batch import BATCH_HEADER, CRC_START, RECORDS_START
from segment_lib.records import LOG_OVERHEAD, MAGIC_OFFSET, BatchHeader, Header, TimestampType
from segment_lib.sniff import find_next_batch

try:
    from segment_lib import _speedups
except ImportError as exc:  # pragma: no cover - depends on the build
    reason = (
        f"segment_lib._speedups is not built ({exc}); build it with "
        "`.venv/bin/python setup.py build_ext --inplace`"
    )
    print(reason, file=sys.stderr)
    pytest.skip(reason, allow_module_level=True)

from kafka.record.default_records import DefaultRecordBatchBuilder

scan = _speedups.scan_batches_v2
INT64_MAX = 2**63 - 1
HANDOVER_REASONS = {"short", "magic", "invalid", "torn", "crc"}


def crc_impls() -> list[str]:
    """Every CRC-32C implementation this CPU can run (the kernels of segment_lib/_crc32c.h,
    by the names CRC32C_IMPL may report, and the single-stream one)."""
    impls = ["auto", "table"]
    for name in ("sse4.2", "sse4.2x3", "sse4.2x3+pclmul", "avx512-vpclmulqdq"):
        try:
            _speedups.crc32c(b"", 0, name)
        except ValueError:
            continue
        impls.append(name)
    return impls


CRC_IMPLS = crc_impls()


# ---- the two paths and their outcomes ------------------------------------------------------


@contextlib.contextmanager
def reference_path() -> Iterator[None]:
    """Run iter_batches with the compiled scan switched off (the pure-Python specification)."""
    saved = log_file._scan_v2
    log_file._scan_v2 = None
    try:
        yield
    finally:
        log_file._scan_v2 = saved


#: what a reader did: the shapes of the headers it yielded, then its error (or None)
Outcome = tuple[list[Any], Any]


def describe_error(exc: SegmentError) -> tuple[Any, ...]:
    return (
        type(exc),
        exc.path,
        exc.position,
        exc.detail,
        exc.expected,
        getattr(exc, "stored", None),
        getattr(exc, "computed", None),
    )


def shape(h: BatchHeader) -> tuple[Any, ...]:
    """A header with the exact type of every field (Codec members must stay Codec members)."""
    return (type(h), tuple(h), tuple(type(f) for f in h))


def collect(run: Callable[[], Iterator[BatchHeader]]) -> Outcome:
    headers: list[Any] = []
    error = None
    try:
        for h in run():
            headers.append(shape(h))
    except SegmentError as exc:
        error = describe_error(exc)
    except Exception as exc:  # e.g. struct.error from an end beyond the buffer
        error = ("other", type(exc), str(exc))
    return headers, error


def both_paths(buf: Any, **kwargs: Any) -> tuple[Outcome, Outcome]:
    fast = collect(lambda: iter_batches(buf, **kwargs))
    with reference_path():
        ref = collect(lambda: iter_batches(buf, **kwargs))
    return fast, ref


def assert_paths_agree(buf: Any, **kwargs: Any) -> Outcome:
    fast, ref = both_paths(buf, **kwargs)
    assert fast == ref
    return ref


# ---- segment builders -----------------------------------------------------------------------

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
_BASE_OFFSET = struct.Struct(">q")  # outside the CRC: patching it keeps a batch valid


def with_base_offset(data: bytes, base_offset: int) -> bytes:
    return _BASE_OFFSET.pack(base_offset) + data[_BASE_OFFSET.size :]


small_bytes = st.none() | st.binary(max_size=24)
int16 = st.integers(-(2**15), 2**15 - 1)
int32 = st.integers(-(2**31), 2**31 - 1)
int64 = st.integers(-(2**63), 2**63 - 1)


@st.composite
def kafka_python_batch(draw: st.DrawFn) -> bytes:
    """A magic-2 data batch as the kafka-python producer builds it."""
    transactional = draw(st.booleans())
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(draw(st.sampled_from(CODECS))),
        is_transactional=transactional,
        producer_id=draw(st.integers(0, 2**40)) if transactional else draw(st.just(-1)),
        producer_epoch=draw(st.integers(0, 2**15 - 1)) if transactional else -1,
        base_sequence=draw(st.integers(-1, 2**31 - 1)),
        batch_size=1 << 30,
    )
    ts = draw(st.integers(0, 2**41))
    for i in range(draw(st.integers(1, 4))):
        headers = [("h", draw(small_bytes))] if draw(st.booleans()) else []
        key, value = draw(small_bytes), draw(small_bytes)
        assert builder.append(i, ts + i, key, value, headers) is not None
    return with_base_offset(bytes(builder.build()), draw(st.integers(0, 2**50)))


@st.composite
def writer_batch(draw: st.DrawFn) -> bytes:
    """A magic-2 batch from segment_lib's broker-faithful writer (LogAppendTime, epochs...)."""
    n = draw(st.integers(1, 3))
    records = [
        WriteRecord(draw(small_bytes), draw(small_bytes), (Header("k", b"v"),), 1000 + i)
        for i in range(n)
    ]
    return encode_batch_v2(
        draw(st.integers(0, 2**62)),
        records,
        codec=draw(st.sampled_from([Codec.NONE, Codec.LZ4])),
        log_append_time=draw(st.none() | st.integers(0, 2**41)),
        partition_leader_epoch=draw(st.integers(-1, 2**31 - 1)),
        last_offset_delta=draw(st.integers(n - 1, 2**31 - 1)),
        offset_deltas=list(range(n)),
    ).data


@st.composite
def control_batch(draw: st.DrawFn) -> bytes:
    return encode_control_batch(
        draw(st.integers(0, 2**40)),
        draw(st.sampled_from([ControlType.COMMIT, ControlType.ABORT])),
        producer_id=draw(st.integers(0, 2**40)),
        producer_epoch=draw(st.integers(0, 2**15 - 1)),
        timestamp=draw(st.integers(0, 2**41)),
    ).data


@st.composite
def crafted_batch(draw: st.DrawFn) -> bytes:
    """A magic-2 header with arbitrary field values (any attributes, codec ids 5-7, negative
    counts, lying lengths), a random payload and a right or wrong CRC."""
    payload = draw(st.binary(max_size=64))
    batch_length = RECORDS_START - LOG_OVERHEAD + len(payload)
    if draw(st.integers(0, 4)) == 0:
        batch_length = draw(int32)
    fields = [
        draw(int64),  # baseOffset
        batch_length,
        draw(int32),  # partitionLeaderEpoch
        2,  # magic
        0,  # crc, set below
        draw(int16),  # attributes
        draw(int32 if draw(st.booleans()) else st.integers(0, 100)),  # lastOffsetDelta
        draw(int64),  # firstTimestamp
        draw(int64),  # maxTimestamp
        draw(int64),  # producerId
        draw(int16),  # producerEpoch
        draw(int32),  # baseSequence
        draw(int32 if draw(st.booleans()) else st.integers(0, 100)),  # recordCount
    ]
    data = bytearray(BATCH_HEADER.pack(*fields) + payload)
    crc = crc32c_reference(bytes(data[CRC_START:]))
    if draw(st.integers(0, 3)) == 0:
        crc = draw(st.integers(0, 2**32 - 1))
    struct.pack_into(">I", data, CRC_START - 4, crc)
    return bytes(data)


@st.composite
def legacy_messages(draw: st.DrawFn) -> bytes:
    """One or more magic 0/1 messages (plain, or one compressed wrapper)."""
    magic = draw(st.sampled_from([0, 1]))
    records = [
        WriteRecord(draw(small_bytes), draw(small_bytes), (), 5000 + i)
        for i in range(draw(st.integers(1, 3)))
    ]
    codec = draw(st.sampled_from([Codec.NONE, Codec.GZIP]))
    batches = encode_legacy_batches(magic, draw(st.integers(0, 2**40)), records, codec=codec)
    return b"".join(b.data for b in batches)


# mostly valid magic-2 batches (runs for the scan to walk), the rest to make it stop
part = st.one_of(
    kafka_python_batch(),
    kafka_python_batch(),
    writer_batch(),
    writer_batch(),
    control_batch(),
    crafted_batch(),
    legacy_messages(),
)


@st.composite
def segment(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """Parts one after the other, then maybe a torn, zero-filled or garbage tail, then maybe a
    few mutated bytes. Returns the bytes and where each part starts."""
    parts = draw(st.lists(part, min_size=0, max_size=8))
    starts, pos = [], 0
    for p in parts:
        starts.append(pos)
        pos += len(p)
    data = bytearray(b"".join(parts))
    tail = draw(st.sampled_from(["none", "none", "zeros", "torn", "garbage"]))
    if tail == "zeros":
        data += bytes(draw(st.integers(1, 200)))
    elif tail == "torn" and parts:
        cut = draw(st.integers(1, len(parts[-1]) - 1))
        del data[len(data) - cut :]
    elif tail == "garbage":
        data += draw(st.binary(min_size=1, max_size=80))
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2, 3])) if data else 0):
        i = draw(st.integers(0, len(data) - 1))
        data[i] = draw(st.integers(0, 255))
    return bytes(data), starts


# ---- iter_batches: compiled scan vs reference ----------------------------------------------


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seg=segment(), verify_crc=st.booleans(), data=st.data())
def test_iter_batches_agrees_with_the_reference(
    seg: tuple[bytes, list[int]], verify_crc: bool, data: st.DataObject
) -> None:
    buf, starts = seg
    # mostly from a batch boundary to the end; sometimes anywhere (mid-batch starts, cut ends)
    start = data.draw(
        st.sampled_from([0, 0, *starts]) | st.integers(0, len(buf) + 2), label="start"
    )
    end = data.draw(st.sampled_from([None, None, None]) | st.integers(0, len(buf) + 2), label="end")
    headers, error = assert_paths_agree(buf, start=start, verify_crc=verify_crc, end=end)
    # error[0] is "other" (a str) for a non-SegmentError such as an end past the buffer
    kind = "no error" if not error else getattr(error[0], "__name__", str(error[0]))
    event(f"{min(len(headers), 3)}+ headers, {kind}")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(st.one_of(kafka_python_batch(), writer_batch(), control_batch()), max_size=8),
    legacy=st.lists(legacy_messages(), max_size=3),
    data=st.data(),
)
def test_valid_segments_with_interleaved_legacy_messages(
    parts: list[bytes], legacy: list[bytes], data: st.DataObject
) -> None:
    """Valid v2 batches with legacy messages inserted anywhere: the scan hands over at each
    legacy message and takes over after it; the whole segment reads without error."""
    for msg in legacy:
        parts.insert(data.draw(st.integers(0, len(parts)), label="at"), msg)
    buf = b"".join(parts)
    headers, error = assert_paths_agree(buf)
    assert error is None
    assert sum(h[1][1] for h in headers) == len(buf)  # sizes cover the buffer


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(kafka_python_batch(), min_size=1, max_size=5), data=st.data())
def test_every_single_byte_mutation_of_a_header_or_payload(
    parts: list[bytes], data: st.DataObject
) -> None:
    """One byte changed anywhere: the CRC catches payload and attribute changes, the framing
    checks the rest; the two paths must still agree."""
    buf = bytearray(b"".join(parts))
    i = data.draw(st.integers(0, len(buf) - 1), label="i")
    buf[i] ^= data.draw(st.integers(1, 255), label="xor")
    for verify_crc in (True, False):
        assert_paths_agree(bytes(buf), verify_crc=verify_crc)


def _v2(n: int = 3, base: int = 0) -> bytes:
    records = [WriteRecord(b"k%d" % i, b"v" * (i + 1), (), 1000 + i) for i in range(n)]
    return encode_batch_v2(base, records).data


def test_each_handover_reason_and_the_error_it_becomes() -> None:
    """For each way the scan stops, the reader raises the reference's error at that position."""
    good = _v2() + _v2(base=3)
    corrupt_crc = bytearray(good)
    corrupt_crc[len(good) - 1] ^= 0xFF
    second = len(_v2())

    def patched(fmt: str, prefix: str, value: int) -> bytes:
        """The second batch with one header field changed and its CRC made right again, so
        that the field is the only thing wrong."""
        out = bytearray(good)
        struct.pack_into(fmt, out, second + struct.calcsize(prefix), value)
        struct.pack_into(
            ">I", out, second + CRC_START - 4, crc32c_reference(out[second + CRC_START :])
        )
        return bytes(out)

    cases: list[tuple[bytes, str, type[SegmentError] | None]] = [
        (good, "end", None),
        (good[:-1], "torn", TornTailError),
        (good + bytes(MAGIC_OFFSET), "short", TornTailError),
        (good + bytes(100), "magic", TornTailError),  # zero-filled preallocation
        (good + b"\x01" * 40, "magic", SegmentError),
        (bytes(corrupt_crc), "crc", CrcMismatchError),
        (patched(">i", ">q", RECORDS_START - LOG_OVERHEAD - 1), "invalid", CorruptBatchError),
        (patched(">i", ">q", -1), "invalid", CorruptBatchError),
        (patched(">h", ">qiibI", 5), "invalid", CorruptBatchError),  # codec id 5
        (patched(">h", ">qiibI", 6), "invalid", CorruptBatchError),
        (patched(">h", ">qiibI", -1), "invalid", CorruptBatchError),  # codec id 7
        (patched(">i", ">qiibIh", -1), "invalid", CorruptBatchError),  # lastOffsetDelta
        (patched(">i", ">qiibIhiqqqhi", -1), "invalid", CorruptBatchError),  # recordCount
        (patched(">h", ">qiibI", 4 | 0x7FF8), "end", None),  # every other attribute bit set
    ]
    for buf, reason, error in cases:
        for verify_crc in (False, True):  # True last: `headers` below are the checked ones
            headers, stop, got_reason = scan(buf, 0, len(buf), verify_crc)
            expected_reason = "end" if reason == "crc" and not verify_crc else reason
            assert got_reason == expected_reason, (reason, buf[-8:])
            assert [shape(h) for h in headers] == assert_paths_agree(buf, verify_crc=verify_crc)[0]
        ref_headers, ref_error = assert_paths_agree(buf)
        assert [shape(h) for h in headers] == ref_headers[: len(headers)]
        if error is None:
            assert ref_error is None and stop == len(buf)
        else:
            assert ref_error is not None and issubclass(ref_error[0], error)
            # the error is about the batch at the stop position (at most a header further in)
            assert stop <= ref_error[2] <= stop + RECORDS_START


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seg=segment(),
    verify_crc=st.booleans(),
    max_batches=st.sampled_from([-1, -1, -1, 0, 1, 2, 3]),
    data=st.data(),
)
def test_scan_contract(
    seg: tuple[bytes, list[int]], verify_crc: bool, max_batches: int, data: st.DataObject
) -> None:
    """scan_batches_v2 directly: its headers are a prefix of the reference's, it stops where the
    reference's next batch starts, and the reason says what the reference finds there."""
    buf, starts = seg
    start = data.draw(st.sampled_from([0, *starts]), label="start")
    end = data.draw(st.sampled_from([len(buf)] * 3) | st.integers(start, len(buf)), label="end")
    headers, stop, reason = scan(buf, start, end, verify_crc, max_batches)
    event(f"stop reason {reason}, {min(len(headers), 2)}+ headers")
    with reference_path():
        ref_headers, ref_error = collect(
            lambda: iter_batches(buf, start, verify_crc=verify_crc, end=end)
        )
    k = len(headers)
    assert [shape(h) for h in headers] == ref_headers[:k]
    assert stop == (headers[-1].next_position if headers else start)
    if reason == "end":
        assert stop == end and ref_error is None and k == len(ref_headers)
    elif reason == "limit":
        assert k == max_batches and stop < end
    else:
        assert reason in HANDOVER_REASONS and stop < end
        if k < len(ref_headers):  # the reference reads on: a legacy message is there
            assert reason == "magic" and ref_headers[k][1][2] in (0, 1)
        else:
            assert ref_error is not None
            assert stop <= ref_error[2] <= stop + RECORDS_START
            expected_type = {
                "crc": CrcMismatchError,
                "invalid": CorruptBatchError,
                "torn": TornTailError,
                "short": TornTailError,
            }.get(reason, SegmentError)
            if reason == "torn" and issubclass(ref_error[0], CorruptBatchError):
                # the reference calls a length running past the end corruption, not a torn
                # tail, when a valid batch follows it (segment_lib.sniff.find_next_batch)
                assert not issubclass(ref_error[0], TornTailError)
                assert find_next_batch(buf, stop + 1, end) is not None
            else:
                assert issubclass(ref_error[0], expected_type)
            if reason == "invalid":
                assert not issubclass(ref_error[0], CrcMismatchError | TornTailError)


def test_fast_path_is_taken_for_magic_2_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reader really uses the compiled scan: the Python header parser is never called on a
    v2-only segment, and only for the legacy message in a mixed one."""
    assert log_file._scan_v2 is scan
    # CRC-verifying scans use the compiled path only with a hardware CRC (else the package's)
    assert log_file._scan_crc_in_hardware is (_speedups.CRC32C_IMPL != "table")
    verify_crc = log_file._scan_crc_in_hardware
    calls: list[int] = []
    real = legacy.parse_legacy_header

    def counting_v2(buf: Any, pos: int) -> BatchHeader:
        raise AssertionError("parse_batch_header_v2 called on the fast path")

    def counting_legacy(buf: Any, pos: int) -> BatchHeader:
        calls.append(pos)
        return real(buf, pos)

    monkeypatch.setattr("segment_lib.log_file.parse_batch_header_v2", counting_v2)
    monkeypatch.setattr("segment_lib.log_file.parse_legacy_header", counting_legacy)
    v2 = b"".join(_v2(base=3 * i) for i in range(40))
    assert len(list(iter_batches(v2, verify_crc=verify_crc))) == 40
    message = encode_legacy_batches(1, 500, [WriteRecord(b"k", b"v", (), 7)])[0].data
    mixed = v2 + message + v2
    headers = list(iter_batches(mixed, verify_crc=verify_crc))
    assert [h.magic for h in headers] == [2] * 40 + [1] + [2] * 40
    assert calls == [len(v2)]


def test_without_hardware_crc_verifying_scans_keep_to_the_package(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With only the portable table CRC in C, a CRC-verifying iteration takes the Python path
    (the `crc32c` package may have hardware support there); a non-verifying one still uses C."""
    calls: list[bool] = []

    def spy(buf: Any, start: int, end: int, verify_crc: bool, max_batches: int) -> Any:
        calls.append(verify_crc)
        return scan(buf, start, end, verify_crc, max_batches)

    monkeypatch.setattr(log_file, "_scan_v2", spy)
    monkeypatch.setattr(log_file, "_scan_crc_in_hardware", False)
    buf = b"".join(_v2(base=3 * i) for i in range(5))
    assert len(list(iter_batches(buf))) == 5
    assert calls == []
    assert len(list(iter_batches(buf, verify_crc=False))) == 5
    assert calls and not any(calls)
    monkeypatch.setattr(log_file, "_scan_crc_in_hardware", True)
    calls.clear()
    assert len(list(iter_batches(buf))) == 5
    assert calls and all(calls)


def test_iteration_stays_lazy() -> None:
    """The first batch comes out without the rest being checked, as before: a consumer that
    stops early never sees a later corrupt batch (the chunked scan starts with one batch)."""
    buf = bytearray(_v2() + _v2(base=3) + _v2(base=6))
    buf[-1] ^= 0xFF  # the third batch fails its CRC
    it = iter_batches(bytes(buf))
    first = next(it)
    assert first.base_offset == 0
    assert next(it).base_offset == 3
    with pytest.raises(CrcMismatchError):
        next(it)
    # and the compiled scan honours its batch limit exactly
    headers, stop, reason = scan(bytes(buf), 0, len(buf), True, 1)
    assert (len(headers), stop, reason) == (1, headers[0].next_position, "limit")


def test_long_segments_cross_the_chunk_sizes() -> None:
    """Several thousand batches (more than the largest chunk) and a corrupt one deep inside."""
    parts = [_v2(n=1, base=i) for i in range(3000)]
    buf = bytearray(b"".join(parts))
    headers, error = assert_paths_agree(bytes(buf))
    assert error is None and len(headers) == 3000
    bad = sum(len(p) for p in parts[:2500])
    buf[bad + RECORDS_START] ^= 0x01
    headers, error = assert_paths_agree(bytes(buf))
    assert len(headers) == 2500 and error[0] is CrcMismatchError and error[2] == bad


def test_last_offset_beyond_int64_is_exact() -> None:
    """baseOffset + lastOffsetDelta past int64: Python ints, not a wrapped C value."""
    records = [WriteRecord(b"k", b"v", (), 1), WriteRecord(b"k", b"v", (), 2)]
    data = encode_batch_v2(0, records, last_offset_delta=2**31 - 1).data
    buf = with_base_offset(data, INT64_MAX) + with_base_offset(data, INT64_MAX - 5)
    headers, _ = assert_paths_agree(buf)
    assert [h[1][4] for h in headers] == [INT64_MAX + 2**31 - 1, INT64_MAX - 5 + 2**31 - 1]


def test_header_fields_and_types() -> None:
    """Field values against what was encoded (not only against the reference)."""
    records = [WriteRecord(b"k", b"v", (), 10), WriteRecord(None, b"w", (), 30)]
    data = encode_batch_v2(
        100,
        records,
        codec=Codec.LZ4,
        log_append_time=99,
        producer_id=7,
        producer_epoch=3,
        base_sequence=11,
        transactional=True,
        partition_leader_epoch=5,
    ).data
    (h,), stop, reason = scan(data, 0, len(data), True)
    assert (stop, reason) == (len(data), "end")
    assert type(h) is BatchHeader
    assert h.position == 0 and h.size == len(data) and h.next_position == len(data)
    assert (h.magic, h.base_offset, h.last_offset, h.next_offset) == (2, 100, 101, 102)
    assert h.record_count == 2
    assert h.codec is Codec.LZ4 and h.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert (h.first_timestamp, h.max_timestamp) == (10, 99)
    assert h.crc == crc32c_reference(data[CRC_START:])
    assert (h.partition_leader_epoch, h.producer_id, h.producer_epoch, h.base_sequence) == (
        5,
        7,
        3,
        11,
    )
    assert h.is_transactional is True and h.is_control is False
    ctl = encode_control_batch(5, ControlType.COMMIT, producer_id=1, producer_epoch=0, timestamp=4)
    (c,), _, _ = scan(ctl.data, 0, len(ctl.data), True)
    assert c.is_control is True and c.is_transactional is True
    assert c.codec is Codec.NONE and c.timestamp_type is TimestampType.CREATE_TIME


# ---- buffers and arguments ------------------------------------------------------------------


def test_every_buffer_type_and_sliced_views(tmp_path: Path) -> None:
    buf = (
        b"".join(_v2(base=3 * i) for i in range(5))
        + encode_legacy_batches(0, 99, [WriteRecord(b"a", b"b", (), None)])[0].data
    )
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(buf)
    expected, error = assert_paths_agree(buf)
    assert error is None
    assert assert_paths_agree(bytearray(buf)) == (expected, None)
    assert assert_paths_agree(memoryview(buf)) == (expected, None)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert assert_paths_agree(m) == (expected, None)
    # a view starting inside a larger buffer: positions are relative to the view
    second = len(_v2())
    assert_paths_agree(memoryview(b"xyz" + buf)[3:], start=second)
    # views the compiled scan does not take (other formats, strides): the reference path
    assert_paths_agree(memoryview(buf).cast("c"))
    assert_paths_agree(memoryview(buf + bytes(len(buf) % 4 and 4 - len(buf) % 4)).cast("I"))
    assert_paths_agree(memoryview(buf)[::2])
    # LogBuffer/open_log (the archiver's and catalog's way in), torn tail allowed or not
    with open_log(path) as log:
        assert [shape(h) for h in log.batches()] == expected
    torn = LogBuffer(buf[:-3], path)
    assert [shape(h) for h in torn.batches(allow_torn_tail=True)] == expected[:-1]
    assert torn.torn_tail_position == expected[-1][1][0]
    with pytest.raises(TornTailError) as info:
        list(LogBuffer(buf[:-3], path).batches())
    assert info.value.path == str(path) and info.value.position == expected[-1][1][0]


def test_odd_positions_take_the_reference_path() -> None:
    buf = _v2() + _v2(base=3)
    for kwargs in (
        {"start": -5},
        {"start": True},
        {"start": 0, "end": len(buf) + 10},
        {"start": 0, "end": -1},
        {"start": len(buf)},
        {"start": len(buf) + 1},
    ):
        assert_paths_agree(buf, **kwargs)


def test_scan_argument_checks() -> None:
    buf = _v2()
    assert scan(buf, 3, 2, True) == ([], 3, "end")
    assert scan(buf, len(buf), len(buf), True) == ([], len(buf), "end")
    with pytest.raises(ValueError):
        scan(buf, -1, len(buf), True)
    with pytest.raises(ValueError):
        scan(buf, 0, len(buf) + 1, True)
    with pytest.raises(TypeError):
        scan("not bytes", 0, 1, True)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        scan(buf, 0.5, 1, True)  # type: ignore[arg-type]
    # keywords, and verify_crc taken by truth value as the reference does
    falsy: Any = []
    assert scan(buf=buf, start=0, end=len(buf), verify_crc=falsy, max_batches=-1)[2] == "end"


# ---- real broker data -----------------------------------------------------------------------


def test_real_broker_segments(real_broker_data: Path) -> None:
    logs = sorted(real_broker_data.rglob("*.log"))
    assert logs
    for path in logs:
        buf = path.read_bytes()
        for verify_crc in (True, False):
            fast, ref = both_paths(buf, verify_crc=verify_crc)
            assert fast == ref, path


# ---- CRC-32C --------------------------------------------------------------------------------


def test_crc32c_check_values() -> None:
    """The CRC-32C check value and the iSCSI test vectors of RFC 3720 (B.4)."""
    vectors = {
        b"123456789": 0xE3069283,
        bytes(32): 0x8A9136AA,
        b"\xff" * 32: 0x62A8AB43,
        bytes(range(32)): 0x46DD794E,
        bytes(range(31, -1, -1)): 0x113FDB5C,
    }
    for impl in CRC_IMPLS:
        for data, value in vectors.items():
            assert _speedups.crc32c(data, 0, impl) == value, (impl, data)


def test_crc32c_every_length_and_alignment() -> None:
    """Every length across several 3-way rounds and their tails, at every misalignment."""
    rng = random.Random(20261121)
    block = bytes(rng.getrandbits(8) for _ in range(3000))
    view = memoryview(block)
    for impl in CRC_IMPLS:
        for offset in range(9):
            for n in range(0, 2400 - offset):
                data = view[offset : offset + n]
                assert _speedups.crc32c(data, 0, impl) == crc32c_reference(data), (impl, offset, n)


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=5000)
    | st.builds(
        lambda seed, n: random.Random(seed).randbytes(n),
        st.integers(0, 2**32),
        st.integers(30_000, 200_000),
    ),
    offset=st.integers(0, 15),
    value=st.integers(0, 2**32 - 1),
)
def test_crc32c_matches_the_crc32c_package(data: bytes, offset: int, value: int) -> None:
    """Random buffers (also long ones: the GIL-releasing path), misaligned, continuing from a
    random previous checksum."""
    view = memoryview(bytes(offset) + data)[offset:]
    expected = crc32c_reference(data, value)
    for impl in CRC_IMPLS:
        assert _speedups.crc32c(view, value, impl) == expected


def test_crc32c_continues_like_one_call() -> None:
    data = os.urandom(10_000)
    for impl in CRC_IMPLS:
        for cut in (0, 1, 7, 768, 769, 5000, 10_000):
            head = _speedups.crc32c(data[:cut], 0, impl)
            assert _speedups.crc32c(data[cut:], head, impl) == crc32c_reference(data)


def test_crc32c_implementation_names() -> None:
    assert _speedups.CRC32C_IMPL in CRC_IMPLS
    with pytest.raises(ValueError):
        _speedups.crc32c(b"", 0, "nonsense")


# ---- memory ---------------------------------------------------------------------------------


def _leak_cases() -> list[tuple[bytes, int]]:
    good = _v2() + _v2(base=2**63 - 2)  # the second batch takes the slow last_offset path
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 1
    return [
        (good, -1),
        (good, 1),  # limit
        (good[:-1], -1),  # torn
        (good + bytes(10), -1),  # short
        (good + bytes(100), -1),  # magic
        (bytes(bad_crc), -1),  # crc
    ]


@pytest.mark.parametrize("case", _leak_cases())
def test_no_leak_in_the_scan(case: tuple[bytes, int]) -> None:
    """Allocations made by the compiled scan are all released, on every stop reason."""
    buf, max_batches = case

    def run(n: int) -> None:
        for _ in range(n):
            scan(buf, 0, len(buf), True, max_batches)
        with contextlib.suppress(SegmentError):
            for _ in iter_batches(buf):
                pass

    run(2000)  # warm caches and free lists
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run(20000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # a leaked header would be >= 20000 * 150 bytes, a leaked int >= 20000 * 28
    assert grown < 64 * 1024, grown


def test_no_leak_in_crc32c() -> None:
    data = os.urandom(40_000)  # above the GIL-release threshold

    def run(n: int) -> None:
        for _ in range(n):
            _speedups.crc32c(data)
            _speedups.crc32c(data[:100], 5, "table")
            with contextlib.suppress(ValueError):
                _speedups.crc32c(data, 0, "nonsense")

    run(500)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        run(5000)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, grown
