"""The compiled record decoder (``segment_lib._speedups``) against the Python reference.

``_decode_records_python`` is the specification; the C twin must return equal ``Record``/``Header``
lists and raise ``CorruptRecordError`` with the same position, detail and expectation for every
input. Valid record bytes come from two independent encoders: kafka-python's
``DefaultRecordBatchBuilder`` (what a real producer library writes) and a tiny varint encoder
below that can also write what no producer would (overlong and 70-bit varints, lying lengths).
Both decoders are additionally checked against the values that were encoded.

When the extension did not build (no C compiler), the whole module is skipped with the reason.
"""

from __future__ import annotations

import contextlib
import gc
import mmap
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from segment_lib import record_batch
from segment_lib.errors import CorruptRecordError
from segment_lib.record_batch import _decode_records_python
from segment_lib.records import Header, Record

try:
    from segment_lib._speedups import decode_records_v2 as compiled
except ImportError as exc:  # pragma: no cover - depends on the build
    reason = (
        f"segment_lib._speedups is not built ({exc}); build it with "
        "`.venv/bin/python setup.py build_ext --inplace`"
    )
    print(reason, file=sys.stderr)
    pytest.skip(reason, allow_module_level=True)

from kafka.record.default_records import DefaultRecordBatchBuilder

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# what fits in a 10-byte varint: the raw (zig-zagged) value has at most 70 bits
VARINT_MIN, VARINT_MAX = -(2**69), 2**69 - 1

Decoder = Callable[..., list[Record]]


# ---- outcome comparison -----------------------------------------------------------------


def outcome(fn: Decoder, *args: Any) -> tuple[Any, ...]:
    """What a decoder did: its result (with the exact types of every part) or its error."""
    try:
        records = fn(*args)
    except CorruptRecordError as exc:
        return ("corrupt", exc.position, exc.detail, exc.expected, exc.path)
    except Exception as exc:  # e.g. TypeError for arguments of the wrong type
        return ("error", type(exc))
    shapes = [
        (
            type(r),
            type(r.offset),
            type(r.timestamp),
            type(r.key),
            type(r.value),
            type(r.headers),
            [(type(h), type(h.key), type(h.value)) for h in r.headers],
        )
        for r in records
    ]
    return ("ok", type(records), records, shapes)


def assert_same(data: Any, count: Any, base: Any, first_ts: Any, append_ts: Any) -> tuple[Any, ...]:
    expected = outcome(_decode_records_python, data, count, base, first_ts, append_ts)
    actual = outcome(compiled, data, count, base, first_ts, append_ts)
    assert actual == expected
    return expected


# ---- encoders -----------------------------------------------------------------------------

RECORDS_START = DefaultRecordBatchBuilder.HEADER_STRUCT.size  # kafka-python's v2 header size


def build_with_kafka_python(
    records: list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
) -> bytes:
    """The records section of an uncompressed batch built by kafka-python."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for offset_delta, timestamp, key, value, headers in records:
        assert builder.append(offset_delta, timestamp, key, value, headers) is not None
    return bytes(builder.build()[RECORDS_START:])


def varint(n: int, pad: int = 0) -> bytes:
    """Zig-zag LEB128 of any int, with ``pad`` redundant continuation bytes (overlong form)."""
    raw = 2 * n if n >= 0 else -2 * n - 1
    out = bytearray()
    while True:
        byte = raw & 0x7F
        raw >>= 7
        if raw == 0 and pad == 0:
            out.append(byte)
            return bytes(out)
        if raw == 0:
            pad -= 1
        out.append(byte | 0x80)


def blob(b: bytes | None, length: int | None = None) -> bytes:
    if b is None:
        return varint(-1 if length is None else length)
    return varint(len(b) if length is None else length) + b


# ---- strategies -----------------------------------------------------------------------------

maybe_bytes = st.one_of(st.none(), st.just(b""), st.binary(max_size=40))
header_names = st.text(st.characters(codec="utf-8"), max_size=12)
headers_st = st.lists(st.tuples(header_names, maybe_bytes), max_size=4)
# deltas written by the producer library: int32 offset deltas (it also stores the last one as
# the int32 lastOffsetDelta), timestamps within +-2**62; wider deltas: crafted_record below
producer_records = st.lists(
    st.tuples(
        st.integers(-(2**31), 2**31 - 1) | st.integers(-300, 300),
        st.integers(-(2**62), 2**62) | st.integers(0, 10**13),
        maybe_bytes,
        maybe_bytes,
        headers_st,
    ),
    max_size=12,
)
# varint field values: small, int64 edges, and beyond int64 (10-byte varints with high bits set)
wide_ints = st.one_of(
    st.integers(-3, 300),
    st.sampled_from([INT64_MIN, INT64_MAX, INT64_MIN - 1, INT64_MAX + 1, VARINT_MIN, VARINT_MAX]),
    st.integers(INT64_MIN, INT64_MAX),
    st.integers(VARINT_MIN, VARINT_MAX),
)
python_ints = st.one_of(
    st.integers(INT64_MIN, INT64_MAX), st.integers(-(2**80), 2**80), st.integers(0, 10**6)
)
append_ts_st = st.one_of(st.none(), python_ints)


@st.composite
def crafted_record(draw: st.DrawFn) -> bytes:
    """One record from the test's own encoder; any varint may be wide, overlong or a lie."""

    def v(n: int) -> bytes:
        return varint(n, draw(st.integers(0, 10 - len(varint(n)))) if draw(st.booleans()) else 0)

    def maybe_lie(true_value: int) -> int:
        return draw(wide_ints) if draw(st.integers(0, 9)) == 0 else true_value

    def field_blob(b: bytes | None) -> bytes:
        n = maybe_lie(-1 if b is None else len(b))
        return v(n) + (b or b"")

    headers = draw(st.lists(st.tuples(st.binary(max_size=8) | st.none(), maybe_bytes), max_size=3))
    body = (
        bytes([draw(st.integers(0, 255))])
        + v(draw(wide_ints))  # timestampDelta
        + v(draw(wide_ints))  # offsetDelta
        + field_blob(draw(maybe_bytes))
        + field_blob(draw(maybe_bytes))
        + v(maybe_lie(len(headers)))
        + b"".join(field_blob(k) + field_blob(hv) for k, hv in headers)
    )
    return v(maybe_lie(len(body))) + body


def _apply_mutation(draw: st.DrawFn, data: bytearray) -> None:
    kind = draw(st.sampled_from(["flip", "set", "truncate", "insert", "delete"]))
    if kind == "insert" or not data:
        at = draw(st.integers(0, len(data)))
        data[at:at] = draw(st.binary(min_size=1, max_size=12))
        return
    at = draw(st.integers(0, len(data) - 1))
    if kind == "flip":
        data[at] ^= 1 << draw(st.integers(0, 7))
    elif kind == "set":
        data[at] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC0, 0xED]))
    elif kind == "truncate":
        del data[at:]
    else:
        del data[at : at + draw(st.integers(1, 16))]


@st.composite
def mutated_encoding(draw: st.DrawFn) -> tuple[bytes, int]:
    """A valid encoding (from either encoder), then a few random byte-level mutations."""
    if draw(st.booleans()):
        records = draw(producer_records.filter(bool))
        data = bytearray(build_with_kafka_python(records))
        count = len(records)
    else:
        parts = draw(st.lists(crafted_record(), min_size=1, max_size=5))
        data = bytearray(b"".join(parts))
        count = len(parts)
    for _ in range(draw(st.integers(1, 4))):
        _apply_mutation(draw, data)
    count += draw(st.sampled_from([0, 0, 0, -1, 1]))
    return bytes(data), count


# ---- valid records ------------------------------------------------------------------------


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(records=producer_records, base=python_ints, append_ts=append_ts_st)
def test_agrees_on_records_written_by_kafka_python(
    records: list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    base: int,
    append_ts: int | None,
) -> None:
    data = build_with_kafka_python(records)
    first_ts = records[0][1] if records else 0
    result = assert_same(data, len(records), base, first_ts, append_ts)
    # and both match what was encoded (independently of either decoder)
    assert result[0] == "ok"
    expected = [
        Record(
            base + offset_delta,
            timestamp if append_ts is None else append_ts,
            key,
            value,
            tuple(Header(name, hvalue) for name, hvalue in headers),
        )
        for offset_delta, timestamp, key, value, headers in records
    ]
    assert result[2] == expected


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    deltas=st.lists(st.tuples(wide_ints, wide_ints, st.integers(0, 10)), min_size=1, max_size=6),
    base=python_ints,
    first_ts=python_ints,
    append_ts=append_ts_st,
)
def test_agrees_on_wide_and_overlong_varints(
    deltas: list[tuple[int, int, int]], base: int, first_ts: int, append_ts: int | None
) -> None:
    """Deltas beyond int64 (10-byte varints with high bits) and overlong encodings are valid
    for the reference; the C decoder must compute the same unbounded ints."""
    parts = []
    for ts_delta, offset_delta, pad in deltas:
        ts = varint(ts_delta)
        ts = varint(ts_delta, min(pad, 10 - len(ts)))
        body = b"\x00" + ts + varint(offset_delta) + blob(b"k") + blob(None) + varint(0)
        parts.append(varint(len(body)) + body)
    result = assert_same(b"".join(parts), len(parts), base, first_ts, append_ts)
    assert result[0] == "ok"
    assert [r.offset for r in result[2]] == [base + d for _t, d, _p in deltas]
    assert [r.timestamp for r in result[2]] == [
        first_ts + t if append_ts is None else append_ts for t, _d, _p in deltas
    ]


# ---- bad bytes ------------------------------------------------------------------------------


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated_encoding(), base=python_ints, append_ts=append_ts_st)
def test_agrees_on_mutated_encodings(
    case: tuple[bytes, int], base: int, append_ts: int | None
) -> None:
    data, count = case
    assert_same(data, count, base, 1_700_000_000_000, append_ts)


@settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])
@given(
    parts=st.lists(crafted_record(), min_size=0, max_size=4),
    extra=st.sampled_from([0, 0, -1, 1]),
    base=python_ints,
    first_ts=python_ints,
    append_ts=append_ts_st,
)
def test_agrees_on_crafted_records(
    parts: list[bytes], extra: int, base: int, first_ts: int, append_ts: int | None
) -> None:
    assert_same(b"".join(parts), len(parts) + extra, base, first_ts, append_ts)


@settings(max_examples=1000)
@given(data=st.binary(max_size=120), count=st.integers(-2, 8))
def test_agrees_on_random_bytes(data: bytes, count: int) -> None:
    assert_same(data, count, 0, 0, None)


def test_error_cases_are_reached() -> None:
    """The comparison above is only meaningful if errors happen: spot-check a few, by hand."""
    ok = b"\x16\x00\x00\x00\x02k\x02v\x02\x02h\x00"  # 1 record: key k, value v, header h=b""
    assert _decode_records_python(ok, 1, 5, 10, None) == [
        Record(5, 10, b"k", b"v", (Header("h", b""),))
    ]
    cases = {
        ok[:-1]: "record length 11 does not fit in the batch",
        ok + b"\x00": "1 bytes left after the 1 records the header declares",
        b"\x16\x00\x00\x00\x02k\x02v\x02\x02\xff\x00": "header key is not UTF-8",
        b"\x16\x00\x00\x00\x02k\x02v\x02\x01\x00\x00": "null header key",
        b"\xff" * 11: "varint record length is longer than 10 bytes",
        b"\x00": "varint timestampDelta runs past the end of the records",
        ok[:4] + b"\x03" + ok[5:]: "key length -2",
    }
    for data, detail in cases.items():
        result = assert_same(data, 1, 0, 0, None)
        assert result[0] == "corrupt" and result[2] == detail, (data, result)


# ---- buffers and odd arguments --------------------------------------------------------------


def _valid() -> bytes:
    return build_with_kafka_python(
        [(0, 1000, b"key", b"value", [("h", b"1")]), (1, 1001, None, b"", [])]
    )


def test_accepts_every_buffer_type(tmp_path: Path) -> None:
    data = _valid()
    expected = _decode_records_python(data, 2, 0, 1000, None)
    path = tmp_path / "records"
    path.write_bytes(b"\xaa" * 7 + data + b"\xbb" * 3)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
        view = memoryview(mapped)
        try:
            assert compiled(view[7 : 7 + len(data)], 2, 0, 1000, None) == expected
        finally:
            view.release()
    for buf in (data, bytearray(data), memoryview(data)):
        assert compiled(buf, 2, 0, 1000, None) == expected
    # a non-contiguous view: bytes() copies it in logical order, in both decoders
    spread = bytes(b for c in data for b in (c, 0))
    assert_same(memoryview(spread)[::2], 2, 0, 1000, None)


@pytest.mark.parametrize(
    "args",
    [
        (_valid(), 2.0, 0, 1000, None),  # count must be an index
        (_valid(), True, 0, 1000, None),  # bool is an int: one record, then bytes left over
        (_valid(), 2**70, 0, 1000, None),  # huge count: fails when the bytes run out
        (_valid(), -(2**70), 0, 1000, None),
        (_valid(), 2, 0.5, 1000, None),  # non-int base: the arithmetic is Python's "+"
        (_valid(), 2, 0, "x", None),
        (_valid(), 2, 0, "x", 5),  # ...and is skipped under LogAppendTime
        (_valid(), 2, 2**100, -(2**100), None),
        (_valid(), 2, 0, 1000, "whatever"),  # log_append_ts is used as given
        (3, 0, 0, 0, None),  # bytes(3) == b"\0\0\0"
        ([0, 0], 0, 0, 0, None),
        ("text", 0, 0, 0, None),
        (None, 0, 0, 0, None),
        (b"", 0, 0, 0, None),
    ],
)
def test_agrees_on_odd_arguments(args: tuple[Any, ...]) -> None:
    assert_same(*args)


def test_keywords_match_the_reference() -> None:
    data = _valid()
    kwargs: dict[str, Any] = {
        "count": 2,
        "base_offset": 0,
        "first_timestamp": 1000,
        "log_append_ts": None,
    }
    assert compiled(data=data, **kwargs) == _decode_records_python(data=data, **kwargs)


def test_record_batch_dispatches_to_the_compiled_decoder() -> None:
    assert record_batch._decode is compiled


# ---- memory -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        _valid(),
        _valid()[:-1],  # record length does not fit
        _valid() + b"\x00",  # bytes left over
        b"\x16\x00\x00\x00\x02k\x02v\x02\x02\xff\x00",  # bad UTF-8 after a key/value/header
        b"\x14\x00\x00\x00\x02k\x02v\x04\x02h\x00\x02h\x00\x00",  # fields end early
        b"\x0c\x00" + b"\xff" * 9 + b"\x7f",  # wide timestamp delta, then a short record
    ],
)
def test_no_leak_on_success_or_error(data: bytes) -> None:
    """Allocations made by the C decoder are all released, including on every error path."""

    def run(n: int) -> None:
        for _ in range(n):
            with contextlib.suppress(CorruptRecordError):
                compiled(data, 2, 2**70, 0, None)  # base beyond int64: the slow add path too

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
    # a leak of even one small object per call would be >= 20000 * 32 bytes
    assert grown < 64 * 1024, grown
