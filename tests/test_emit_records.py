"""``emit_records_v2``: records handed to a callable, compiled and reference, against the decoder.

The contract (segment_lib.record_batch.emit_records_v2): for each record, ``fn(*template)`` with
the record's value, key, timestamp and headers in their slots; what fn raises is returned with the
index to resume at; bad bytes raise exactly what ``decode_records_v2`` raises. The pure-Python
``_emit_records_python`` is the specification, the compiled one must agree call for call; both
must agree with the decoder (itself checked against kafka-python) on every magic-2 batch of the
real broker fixtures and on compressed batches.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka_archive_dev.writer.encode import WriteRecord
from kafka_archive_dev.writer.partition_writer import ManualClock, PartitionWriter

from segment_lib import record_batch
from segment_lib.compression import Codec
from segment_lib.errors import CorruptRecordError, SegmentError
from segment_lib.log_file import decode_batch, iter_batches
from segment_lib.record_batch import _emit_records_python, emit_records_v2
from segment_lib.records import BatchHeader, Header, TimestampType

try:
    from segment_lib._speedups import decode_records_v2 as compiled_decode
    from segment_lib._speedups import emit_records_v2 as compiled
except ImportError as exc:  # pragma: no cover - depends on the build
    reason = f"segment_lib._speedups is not built ({exc})"
    print(reason, file=sys.stderr)
    pytest.skip(reason, allow_module_level=True)

from tests.test_speedups import (
    assert_same,
    blob,
    build_with_kafka_python,
    mutated_encoding,
    producer_records,
    varint,
)

#: produce()-like layout: (topic, value, key, partition, on_delivery, callback, timestamp, headers)
TEMPLATE = ("topic", None, None, 7, "no-mark", None, None, None)
SLOTS = (1, 2, 6, 7, 4)


class Recorder:
    """A callable that logs its arguments and raises ``fail`` at call number ``fail_at``."""

    def __init__(self, fail_at: int = -1, fail: BaseException | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fail_at, self.fail = fail_at, fail

    def __call__(self, *args: Any) -> None:
        if len(self.calls) == self.fail_at:
            self.fail_at = -1
            assert self.fail is not None
            raise self.fail
        # types too: headers must be lists of plain tuples, None when there are none
        hdrs = args[7]
        shape = None if hdrs is None else (type(hdrs), [type(h) for h in hdrs])
        self.calls.append((*args, shape))


def run(impl: Any, data: bytes, count: int, first_ts: int, append_ts: int | None,
        fn: Recorder, **kw: Any) -> tuple[Any, ...]:  # fmt: skip
    try:
        done, error = impl(data, count, first_ts, append_ts, fn, TEMPLATE, SLOTS, **kw)
    except CorruptRecordError as exc:
        return ("corrupt", exc.position, exc.detail, exc.expected, fn.calls)
    return ("ok", done, type(error), str(error), fn.calls)


def both(
    data: bytes, count: int, first_ts: int, append_ts: int | None, **kw: Any
) -> tuple[Any, ...]:
    fail_at = kw.pop("fail_at", -1)
    expected = run(_emit_records_python, data, count, first_ts, append_ts,
                   Recorder(fail_at, ValueError("full")), **kw)  # fmt: skip
    actual = run(compiled, data, count, first_ts, append_ts,
                 Recorder(fail_at, ValueError("full")), **kw)  # fmt: skip
    assert actual == expected
    return expected


Rec = tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    records=producer_records.filter(bool),
    append_ts=st.one_of(st.none(), st.integers(0, 2**40)),
    zero=st.booleans(),
    marks=st.booleans(),
)
def test_calls_match_what_was_encoded(
    records: list[Rec], append_ts: int | None, zero: bool, marks: bool
) -> None:
    data = build_with_kafka_python(records)
    first_ts = records[0][1]
    kw: dict[str, Any] = {"zero_timestamps": zero}
    if marks:
        kw["marks"] = ("first", "last", "only")
    result = both(data, len(records), first_ts, append_ts, **kw)
    assert result[:4] == ("ok", len(records), type(None), "None")
    n = len(records)
    expected = []
    for i, (_delta, ts, key, value, headers) in enumerate(records):
        mark = "no-mark"
        if marks:
            mark = "only" if n == 1 else "first" if i == 0 else "last" if i == n - 1 else mark
        hdrs = [tuple(h) for h in headers] or None
        shape = None if hdrs is None else (list, [tuple] * len(hdrs))
        timestamp = 0 if zero else ts if append_ts is None else append_ts
        expected.append(("topic", value, key, 7, mark, None, timestamp, hdrs, shape))
    assert result[4] == expected


@settings(max_examples=800, suppress_health_check=[HealthCheck.too_slow])
@given(case=mutated_encoding(), append_ts=st.one_of(st.none(), st.integers(-5, 2**40)))
def test_agrees_on_mutated_encodings(case: tuple[bytes, int], append_ts: int | None) -> None:
    data, count = case
    both(data, count, 1_700_000_000_000, append_ts)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(records=producer_records.filter(lambda r: len(r) >= 2), data=st.data())
def test_a_raising_fn_stops_and_the_rest_resumes(records: list[Rec], data: st.DataObject) -> None:
    encoded = build_with_kafka_python(records)
    n = len(records)
    fail_at = data.draw(st.integers(0, n - 1))
    first = both(encoded, n, records[0][1], None, fail_at=fail_at)
    assert first[1:4] == (fail_at, ValueError, "full")
    rest = both(encoded, n, records[0][1], None, start=fail_at)
    assert rest[1] == n
    # nothing lost, nothing twice: the two runs together are one uninterrupted run
    assert first[4] + rest[4] == both(encoded, n, records[0][1], None)[4]


def _record(headers: bytes, count: int) -> bytes:
    body = b"\x00" + varint(0) + varint(0) + blob(b"k") + blob(b"v") + varint(count) + headers
    return varint(len(body)) + body


def test_repeated_headers_share_objects_and_stay_exact() -> None:
    """Identical header bytes of consecutive records give one shared headers object (the
    compiled decoder skips parsing them again) - but only with the same count, and a change of
    headers, or the same bytes under another count, is decoded (or refused) afresh."""
    a = blob(b"trace") + blob(b"1") + blob(b"src") + blob(b"bench")
    b = blob(b"trace") + blob(b"2") + blob(b"src") + blob(b"bench")
    good = [_record(a, 2), _record(a, 2), _record(b, 2), _record(a, 2), _record(b"", 0)]
    data = b"".join(good)
    assert assert_same(data, len(good), 0, 1, None)[0] == "ok"
    records = compiled_decode(data, len(good), 0, 1, None)
    assert records[0].headers is records[1].headers  # shared (tuples: immutable)
    assert records[2].headers[0] == Header("trace", b"2")
    assert records[3].headers == records[0].headers
    both(data, len(good), 1, None)
    # the same header bytes under another count: parsed again, and refused as the reference does
    bad = b"".join([_record(a, 2), _record(a, 3)])
    assert assert_same(bad, 2, 0, 1, None)[0] == "corrupt"
    both(bad, 2, 1, None)


@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize(
    "marks", [("f", "l", None), (None, "l", "o"), ("f", None, None), (None, None, None)]
)
def test_marks_with_none_items_keep_the_template(count: int, marks: tuple[Any, ...]) -> None:
    """A None in ``marks`` leaves that record's mark slot to the next rule, then the template
    (the compiled and the reference loops agree on every combination)."""
    data = build_with_kafka_python([(i, i, b"k", b"v", []) for i in range(count)])
    result = both(data, count, 0, None, marks=marks)
    assert result[1] == count
    first, last, only = marks
    expected = []
    for i in range(count):
        mark = "no-mark"
        if count == 1 and only is not None:
            mark = only
        elif i == 0 and first is not None:
            mark = first
        elif i == count - 1 and last is not None:
            mark = last
        expected.append(mark)
    assert [call[4] for call in result[4]] == expected


@pytest.mark.parametrize("impl", [_emit_records_python, compiled], ids=["python", "compiled"])
def test_base_exceptions_propagate(impl: Any) -> None:
    data = build_with_kafka_python([(0, 1, b"k", b"v", []), (1, 2, b"k", b"v", [])])
    fn = Recorder(1, KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        impl(data, 2, 1, None, fn, TEMPLATE, SLOTS)
    assert len(fn.calls) == 1


@pytest.mark.parametrize("impl", [_emit_records_python, compiled], ids=["python", "compiled"])
@pytest.mark.parametrize(
    ("template", "slots", "kw"),
    [
        (TEMPLATE, (1, 2, 6, 7), {}),  # four slots
        (TEMPLATE, (1, 2, 6, 8, 4), {}),  # outside the template
        (TEMPLATE, (1, 1, 6, 7, 4), {}),  # twice
        (TEMPLATE, (1, 2, 6, 7, -1), {"marks": ("a", "b", "c")}),  # marks without a slot
        (tuple(range(17)), (1, 2, 6, 7, 4), {}),  # too many arguments
    ],
)
def test_inconsistent_templates_are_refused(
    impl: Any, template: tuple[Any, ...], slots: tuple[int, ...], kw: dict[str, Any]
) -> None:
    data = build_with_kafka_python([(0, 1, b"k", b"v", [])])
    with pytest.raises(ValueError):
        impl(data, 1, 1, None, Recorder(), template, slots, **kw)


# ---- whole batches: the public function against the decoder ------------------------------------


def _calls_of_decoder(buf: bytes | memoryview, h: BatchHeader) -> list[tuple[Any, ...]]:
    out = []
    for r in decode_batch(buf, h):
        hdrs = [tuple(x) for x in r.headers] or None
        shape = None if hdrs is None else (list, [tuple] * len(hdrs))
        out.append(("topic", r.value, r.key, 7, "no-mark", None, r.timestamp, hdrs, shape))
    return out


def _check_batches(buf: bytes | memoryview) -> int:
    checked = 0
    for h in iter_batches(buf):
        if h.magic != 2 or h.is_control:
            continue
        fn = Recorder()
        assert emit_records_v2(buf, h, fn, TEMPLATE, SLOTS) == (h.record_count, None)
        assert fn.calls == _calls_of_decoder(buf, h)
        checked += 1
    return checked


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_compressed_batches_match_the_decoder(tmp_path: Path, codec: Codec) -> None:
    clock = ManualClock(1_700_000_000_000)
    pw = PartitionWriter(tmp_path, "t", 0, clock=clock)
    for b in range(5):
        pw.append(
            [
                WriteRecord(
                    None if i % 7 == 0 else f"k{b}-{i}".encode(),
                    None if i % 11 == 0 else bytes(range(i % 200)) * 3,
                    (Header("h", b"x"), Header("é", None)) if i % 3 else (),
                    clock.advance(1),
                )
                for i in range(50)
            ],
            codec=codec,
        )
    pw.close()
    buf = b"".join(p.read_bytes() for p in sorted(pw.dir.glob("*.log")))
    assert _check_batches(buf) == 5


def test_log_append_time_batches_take_the_batch_timestamp(tmp_path: Path) -> None:
    clock = ManualClock(1_700_000_000_000)
    pw = PartitionWriter(
        tmp_path, "t", 0, clock=clock, timestamp_type=TimestampType.LOG_APPEND_TIME
    )
    pw.append([WriteRecord(b"k", b"v", (), 5), WriteRecord(b"k", b"w", (), 9)])
    pw.close()
    buf = b"".join(p.read_bytes() for p in sorted(pw.dir.glob("*.log")))
    (h,) = list(iter_batches(buf))
    fn = Recorder()
    emit_records_v2(buf, h, fn, TEMPLATE, SLOTS)
    assert [c[6] for c in fn.calls] == [h.max_timestamp] * 2


def test_corrupt_compressed_records_name_the_batch(tmp_path: Path) -> None:
    data = build_with_kafka_python([(0, 1, b"k", b"v", [])])
    bad = data[:-1] + b"\x05"  # the header count now claims records the bytes do not hold
    with pytest.raises(CorruptRecordError) as exc:
        record_batch._emit(bad, 1, 1, None, Recorder(), TEMPLATE, SLOTS)
    assert exc.value.position is not None


def test_every_real_broker_batch_matches_the_decoder(real_broker_data: Path) -> None:
    checked = 0
    for log in sorted(real_broker_data.rglob("*.log")):
        data = log.read_bytes()
        try:
            checked += _check_batches(data)
        except SegmentError:
            continue  # torn or legacy files: the decoder's own tests cover them
    assert checked > 100
