"""The compiled one-pass batch summary (``segment_lib._summary``) and its CRC-32C.

Specifications the C code is checked against, all independent of it:

* the CRC-32C: the ``crc32c`` package, on random buffers, starting values and splits; the
  combine (crc(A || B) from crc(A), crc(B), len(B)) with PCLMULQDQ against the package and
  against the portable shift-and-add multiplication (two independent computations of
  x^(8n) mod P), also for lengths far beyond any buffer;
* the walk: ``segment_lib._speedups.scan_batches_v2`` (the compiled scan that is itself
  checked against the Python reader) for where and why it stops and which batches it accepts,
  and a per-batch model of the booking rules written here from the contract in _summary.c
  (:func:`reference`) for the aggregates; the CRC it continues against the package over the
  bytes it walked; summarizing in two calls must equal one call (the state carries);
* the catalog extractor's paths (summary, header scan, general per-batch path) give the same
  rows: tests/test_catalog_extract.py.

When the extension did not build (no C compiler), the module is skipped with the reason.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence
from typing import Any

import pytest
from crc32c import crc32c as crc32c_reference
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka_archive_dev.writer.encode import (
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
    encode_empty_batch_v2,
    encode_legacy_batches,
)

from segment_lib.compression import Codec
from segment_lib.control import ControlType
from segment_lib.record_batch import BATCH_HEADER, CRC_START
from segment_lib.records import LOG_OVERHEAD, BatchHeader

try:
    from segment_lib import _speedups, _summary
except ImportError as exc:  # pragma: no cover - depends on the build
    pytest.skip(f"compiled extensions not built: {exc}", allow_module_level=True)

INT64_MAX = (1 << 63) - 1
MASK32 = 0xFFFFFFFF


# ---------------------------------------------------------------------------------------------
# CRC-32C


def _available(impl: str) -> bool:
    try:
        _summary.crc32c(b"", 0, impl)
    except ValueError:
        return False
    return True


#: the raw updates this CPU has (the portable table always; "x3" and "fold" where supported)
IMPLS = [i for i in ("auto", "table", "x3", "fold") if _available(i)]


@settings(max_examples=300, deadline=None)
@given(
    data=st.binary(max_size=5000),
    value=st.integers(0, MASK32),
    skip=st.integers(0, 70),
    impl=st.sampled_from(IMPLS),
)
def test_crc32c_equals_the_package(data: bytes, value: int, skip: int, impl: str) -> None:
    view = memoryview(data)[skip:]  # every alignment of the start (8 and 64 bytes)
    assert _summary.crc32c(view, value, impl) == crc32c_reference(bytes(view), value)


def test_crc32c_long_buffers_and_check_value() -> None:
    assert _summary.crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value (RFC 3720)
    rng = random.Random(7)
    data = rng.randbytes((1 << 20) + 300)
    for n in (767, 768, 769, 1023, 1024, 1025, 1087, 1088, 1300, 3 * 256 * 7 + 5, 65_536, 1 << 20):
        for skip in (0, 1, 8, 63, 64, 65, 200):
            piece = data[skip : skip + n]
            want = crc32c_reference(piece, 0x1234)
            for impl in IMPLS:
                assert _summary.crc32c(memoryview(data)[skip : skip + n], 0x1234, impl) == want, (
                    n,
                    skip,
                    impl,
                )


def test_crc32c_unknown_impl() -> None:
    assert _summary.CRC32C_IMPL in ("avx512-vpclmulqdq", "sse4.2x3+pclmul", "sse4.2x3", "table")
    with pytest.raises(ValueError):
        _summary.crc32c(b"x", 0, "nope")


@settings(max_examples=300, deadline=None)
@given(
    a=st.binary(max_size=600),
    b=st.binary(max_size=6000),
    impl=st.sampled_from(["auto", "table"]),
)
def test_combine_equals_the_crc_of_the_concatenation(a: bytes, b: bytes, impl: str) -> None:
    got = _summary.crc32c_combine(crc32c_reference(a), crc32c_reference(b), len(b), impl)
    assert got == crc32c_reference(a + b)


def test_combine_over_long_runs_of_zeros() -> None:
    rng = random.Random(3)
    a = rng.randbytes(100)
    for n in (1, 5, 21, 255, 256, 257, 4096, 65_537, 3 << 20):
        zeros = bytes(n)
        want = crc32c_reference(a + zeros)
        for impl in ("auto", "table"):
            assert _summary.crc32c_combine(crc32c_reference(a), crc32c_reference(zeros), n, impl)
            assert (
                _summary.crc32c_combine(crc32c_reference(a), crc32c_reference(zeros), n, impl)
                == want
            ), (n, impl)


@settings(max_examples=300, deadline=None)
@given(crc_a=st.integers(0, MASK32), crc_b=st.integers(0, MASK32), n=st.integers(0, (1 << 62) - 1))
def test_combine_implementations_agree_on_any_length(crc_a: int, crc_b: int, n: int) -> None:
    """PCLMULQDQ with the x^(2^k) table vs the portable square-and-multiply: two independent
    computations of x^(8n) mod P."""
    assert _summary.crc32c_combine(crc_a, crc_b, n, "auto") == _summary.crc32c_combine(
        crc_a, crc_b, n, "table"
    )


def test_crc_arguments_are_checked() -> None:
    with pytest.raises(ValueError):
        _summary.crc32c(b"x", 0, "sse9")
    with pytest.raises((ValueError, OverflowError)):
        _summary.crc32c(b"x", 1 << 32)
    with pytest.raises((ValueError, OverflowError)):
        _summary.crc32c_combine(1 << 32, 0, 1)


# ---------------------------------------------------------------------------------------------
# the walk: a per-batch model of the contract

IB_CHOICES = (1, 200, 1000, 5000, 1 << 20)
HMS_CHOICES = (1, 7, 1000, 60_000)
NO_EPOCH = _summary.NO_EPOCH


def reference(
    headers: Sequence[BatchHeader], base: int, ib: int, hms: int, state: tuple[int, ...]
) -> tuple[tuple[int, ...], list[tuple[int, ...]], list[tuple[int, ...]], dict[int, list[int]]]:
    """The booking rules of _summary.c's header comment, one batch at a time."""
    (first, first_ts, last, batches, records, txn, ctl, codecs, max_ts, off_max, epoch,
     epoch_first, iv_open, iv_so, iv_bs, iv_mx, iv_rmx, iv_cnt) = state  # fmt: skip
    intervals: list[tuple[int, ...]] = []
    runs: list[tuple[int, ...]] = []
    hist: dict[int, list[int]] = {}
    for h in headers:
        pos = base + h.position
        prev_last = last
        if first < 0:
            first, first_ts = h.base_offset, h.first_timestamp
        last = h.last_offset
        batches += 1
        records += h.record_count
        txn += h.is_transactional
        ctl += h.is_control
        codecs |= 1 << int(h.codec)
        if h.max_timestamp > max_ts:
            max_ts, off_max = h.max_timestamp, h.last_offset
        if h.partition_leader_epoch != epoch:
            if epoch != NO_EPOCH:
                runs.append((epoch, epoch_first, prev_last))
            epoch, epoch_first = h.partition_leader_epoch, h.base_offset
        rmax = h.max_timestamp if h.record_count else -1
        if iv_open and pos + h.size - iv_bs <= ib:
            iv_mx, iv_rmx, iv_cnt = (
                max(iv_mx, h.max_timestamp),
                max(iv_rmx, rmax),
                iv_cnt + h.record_count,
            )
        else:
            if iv_open:
                intervals.append((iv_so, prev_last, iv_bs, pos, iv_mx, iv_rmx, iv_cnt))
            iv_open, iv_so, iv_bs = 1, h.base_offset, pos
            iv_mx, iv_rmx, iv_cnt = h.max_timestamp, rmax, h.record_count
        if h.max_timestamp >= 0:
            slot = hist.setdefault(h.max_timestamp - h.max_timestamp % hms, [0, 0])
            slot[0] += 0 if h.is_control else h.record_count
            slot[1] += h.size
    out = (first, first_ts, last, batches, records, txn, ctl, codecs, max_ts, off_max, epoch,
           epoch_first, iv_open, iv_so, iv_bs, iv_mx, iv_rmx, iv_cnt)  # fmt: skip
    return out, intervals, runs, hist


def _hist(rows: Sequence[tuple[int, ...]]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for bucket, records, nbytes in rows:
        slot = out.setdefault(bucket, [0, 0])
        slot[0] += records
        slot[1] += nbytes
    return out


def _raw_batch(
    *,
    base_offset: int,
    epoch: int,
    attributes: int,
    delta: int,
    first_ts: int,
    max_ts: int,
    count: int,
    payload: bytes = b"",
    length_adjust: int = 0,
    good_crc: bool = True,
) -> bytes:
    """A batch with arbitrary header values (the payload is not records: the walk never
    decodes them)."""
    length = BATCH_HEADER.size - LOG_OVERHEAD + len(payload) + length_adjust
    head = bytearray(
        BATCH_HEADER.pack(
            base_offset, length, epoch, 2, 0, attributes, delta, first_ts, max_ts, 7, 1, 0, count
        )
    )
    crc = crc32c_reference(bytes(head[CRC_START:]) + payload)
    struct.pack_into(">I", head, CRC_START - 4, crc if good_crc else crc ^ 1)
    return bytes(head) + payload


def _random_segment(rng: random.Random, n: int, *, odd: bool = False) -> bytes:
    """``n`` consecutive batches: data batches of every codec (transactional or not, varying
    sizes), control batches, emptied batches, epoch changes, timestamps out of order; with
    ``odd`` also header-only batches with extreme values (negative offsets and timestamps,
    offsets near 2^63) and legacy messages in between."""
    out = []
    offset = rng.choice([0, 5, 1 << 40])
    epoch = rng.randint(-1, 3)
    ts = 1_700_000_000_000
    for _ in range(n):
        if rng.random() < 0.15:
            epoch += rng.randint(0, 2)
        kind = rng.random()
        ts += rng.randint(-3000, 5000)
        if odd and kind < 0.2:
            base = rng.choice([offset, -rng.randint(1, 1000), INT64_MAX - rng.randint(0, 50)])
            out.append(
                _raw_batch(
                    base_offset=base,
                    epoch=rng.choice([epoch, -5, 1 << 30]),
                    attributes=rng.choice([0, 1, 4, 0x10, 0x20, 0x30, 0x08, 0x40]),
                    delta=rng.choice([0, 3, 1 << 30]),
                    first_ts=rng.choice([ts, -1, -(1 << 62)]),
                    max_ts=rng.choice([ts, -1, -7, 1 << 62]),
                    count=rng.choice([0, 1, 9]),
                    payload=rng.randbytes(rng.randint(0, 300)),
                )
            )
            offset += 4
            continue
        if odd and kind < 0.3:
            recs = [WriteRecord(b"k", rng.randbytes(rng.randint(0, 50)), (), ts)]
            for b in encode_legacy_batches(rng.choice([0, 1]), offset, recs):
                out.append(b.data)
            offset += 1
            continue
        if kind < 0.1:
            b = encode_control_batch(offset, rng.choice([ControlType.COMMIT, ControlType.ABORT]),
                                     producer_id=9, producer_epoch=0, timestamp=ts,
                                     partition_leader_epoch=epoch)  # fmt: skip
        elif kind < 0.15:
            b = encode_empty_batch_v2(offset, offset + rng.randint(0, 5), max_timestamp=ts,
                                      partition_leader_epoch=epoch)  # fmt: skip
        else:
            recs = [
                WriteRecord(
                    b"k%d" % i,
                    rng.randbytes(rng.randint(0, 400)),
                    (),
                    ts + rng.randint(-2000, 2000),
                )
                for i in range(rng.randint(1, 12))
            ]
            txn = rng.random() < 0.2
            b = encode_batch_v2(offset, recs, codec=rng.choice(list(Codec)),
                                producer_id=9 if txn else -1, producer_epoch=0 if txn else -1,
                                base_sequence=0 if txn else -1, transactional=txn,
                                partition_leader_epoch=epoch)  # fmt: skip
        out.append(b.data)
        offset = b.last_offset + 1
    return b"".join(out)


def _random_state(rng: random.Random) -> tuple[int, ...]:
    if rng.random() < 0.5:
        return _summary.INITIAL_STATE
    return (
        rng.choice([-1, 0, 17]),
        rng.randint(-5, 5),
        rng.choice([-1, 99]),
        rng.randint(0, 5),
        rng.randint(0, 50),
        rng.randint(0, 2),
        rng.randint(0, 2),
        rng.randint(0, 31),
        rng.choice([-1, 1_700_000_000_000]),
        rng.choice([-1, 42]),
        rng.choice([NO_EPOCH, 0, 2]),
        rng.choice([-1, 3]),
        rng.randint(0, 1),
        3,
        rng.choice([0, 100]),
        rng.choice([-1, 1_700_000_000_000]),
        rng.choice([-1, 1_700_000_000_000]),
        rng.randint(0, 9),
    )


def _check_walk(
    buf: bytes, start: int, end: int, verify: bool, crc: int | None,
    state: tuple[int, ...], ib: int, hms: int, base: int,
) -> tuple[Any, ...]:  # fmt: skip
    """summarize_v2 against scan_batches_v2 + the model; returns the summary's result."""
    got = _summary.summarize_v2(buf, start, end, base, verify, crc, state, ib, hms)
    stop, reason, crc_out, st_out, intervals, runs, hist = got
    headers, scan_stop, scan_reason = _speedups.scan_batches_v2(buf, start, end, verify, -1)
    # the same batches accepted, except that a batch whose last offset overflows int64 stops
    # the summary ('wide': the Python reader books it)
    wide = [i for i, h in enumerate(headers) if h.last_offset > INT64_MAX]
    if wide:
        headers = headers[: wide[0]]
        assert (stop, reason) == (headers[-1].next_position if headers else start, "wide")
    elif (reason, scan_reason) == ("wide", "crc"):
        # a batch both wide and with a bad CRC: the summary checks the offset range first (the
        # order of the two checks is not part of the contract; the Python reader takes over at
        # that batch either way and raises the CRC error)
        fields = BATCH_HEADER.unpack_from(buf, stop)
        base_offset, last_offset_delta = fields[0], fields[6]
        assert stop == scan_stop
        assert base_offset + last_offset_delta > INT64_MAX
    else:
        assert (stop, reason) == (scan_stop, scan_reason)
    want_state, want_iv, want_runs, want_hist = reference(headers, base, ib, hms, state)
    assert st_out == want_state
    assert intervals == want_iv
    assert runs == want_runs
    assert _hist(hist) == want_hist
    if crc is None:
        assert crc_out is None
    else:
        assert crc_out == crc32c_reference(buf[start:stop], crc)
    if verify and crc is not None:  # the second-pass variant (no PCLMULQDQ) agrees
        again = _summary.summarize_v2(buf, start, end, base, verify, crc, state, ib, hms, False)
        assert again == got
    return got


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 1 << 30), odd=st.booleans(), verify=st.booleans())
def test_walk_matches_the_scan_and_the_model(seed: int, odd: bool, verify: bool) -> None:
    rng = random.Random(seed)
    buf = _random_segment(rng, rng.randint(0, 40), odd=odd)
    start = rng.choice([0, 0, rng.randint(0, max(0, len(buf) - 1))])
    end = rng.choice([len(buf), len(buf), rng.randint(start, len(buf))])
    crc = rng.choice([None, 0, rng.randint(0, MASK32)])
    _check_walk(buf, start, end, verify, crc, _random_state(rng), rng.choice(IB_CHOICES),
                rng.choice(HMS_CHOICES), rng.choice([0, 12345]))  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 1 << 30), verify=st.booleans())
def test_walk_of_mutated_bytes(seed: int, verify: bool) -> None:
    """Flipped bytes anywhere (headers, lengths, CRCs, payloads), cut tails, zero tails: the
    summary stops where the scan stops, for the same reason, having booked the same batches."""
    rng = random.Random(seed)
    buf = bytearray(_random_segment(rng, rng.randint(1, 25), odd=rng.random() < 0.3))
    starts = [h.position for h in _speedups.scan_batches_v2(buf, 0, len(buf), False, -1)[0]]
    for _ in range(rng.randint(1, 4)):
        if starts and rng.random() < 0.6:  # a header field: length, magic, attributes, counts
            i = min(len(buf) - 1, rng.choice(starts) + rng.randrange(BATCH_HEADER.size))
        else:
            i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    if starts and rng.random() < 0.2:  # a length far too small or too big
        struct.pack_into(">i", buf, rng.choice(starts) + 8, rng.choice([-1, 0, 48, 1 << 30]))
    tail = rng.choice([b"", bytes(rng.randint(1, 40)), rng.randbytes(rng.randint(1, 40))])
    data = bytes(buf[: rng.randint(0, len(buf))] if rng.random() < 0.3 else buf) + tail
    _check_walk(data, 0, len(data), verify, rng.choice([None, 77]), _summary.INITIAL_STATE,
                rng.choice(IB_CHOICES), rng.choice(HMS_CHOICES), 0)  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 1 << 30), verify=st.booleans())
def test_two_calls_equal_one(seed: int, verify: bool) -> None:
    """The state carries everything: walking [0, k) then [k, n) gives what [0, n) gives."""
    rng = random.Random(seed)
    buf = _random_segment(rng, rng.randint(2, 30))
    headers, _, reason = _speedups.scan_batches_v2(buf, 0, len(buf), True, -1)
    assert reason == "end"
    k = rng.choice(headers).position
    ib, hms = rng.choice(IB_CHOICES), rng.choice(HMS_CHOICES)
    init = _summary.INITIAL_STATE
    whole = _summary.summarize_v2(buf, 0, len(buf), 0, verify, 5, init, ib, hms)
    a = _summary.summarize_v2(buf, 0, k, 0, verify, 5, init, ib, hms)
    assert a[:2] == (k, "end")
    # the second part as a buffer of its own, its positions continuing from base k
    b = _summary.summarize_v2(buf[k:], 0, len(buf) - k, k, verify, a[2], a[3], ib, hms)
    assert (b[0] + k, b[1]) == whole[:2]
    assert b[2] == whole[2]  # the object CRC
    assert b[3] == whole[3]
    assert a[4] + b[4] == whole[4]
    assert a[5] + b[5] == whole[5]
    assert _hist(a[6] + b[6]) == _hist(whole[6])


def test_wide_last_offset_stops_the_walk() -> None:
    ok = _raw_batch(base_offset=INT64_MAX - 10, epoch=0, attributes=0, delta=10, first_ts=1,
                    max_ts=2, count=1)  # fmt: skip
    wide = _raw_batch(base_offset=INT64_MAX - 10, epoch=0, attributes=0, delta=11, first_ts=1,
                      max_ts=2, count=1)  # fmt: skip
    got = _check_walk(ok + wide, 0, len(ok + wide), True, 0, _summary.INITIAL_STATE, 100, 10, 0)
    assert got[:2] == (len(ok), "wide")
    assert got[3][2] == INT64_MAX  # the last offset of the accepted batch


def test_state_beyond_int64_is_refused() -> None:
    state = list(_summary.INITIAL_STATE)
    state[2] = INT64_MAX + 1  # a last offset booked from a Python header
    with pytest.raises(OverflowError):
        _summary.summarize_v2(b"", 0, 0, 0, True, None, tuple(state), 10, 10)


def test_walk_arguments_are_checked() -> None:
    init = _summary.INITIAL_STATE
    for args in [
        (b"abc", -1, 3, 0, True, None, init, 10, 10),
        (b"abc", 0, 4, 0, True, None, init, 10, 10),
        (b"abc", 0, 3, -1, True, None, init, 10, 10),
        (b"abc", 0, 3, 0, True, None, init, 0, 10),
        (b"abc", 0, 3, 0, True, None, init, 10, 0),
        (b"abc", 0, 3, 0, True, None, init[:5], 10, 10),
        (b"abc", 0, 3, 0, True, 1 << 32, init, 10, 10),
    ]:
        with pytest.raises((ValueError, OverflowError)):
            _summary.summarize_v2(*args)


def test_big_segment_in_one_call_releases_nothing_wrong() -> None:
    """A walk over more than the GIL-release threshold (64 batches of ~16 KiB) from a
    memoryview slice: results as the model says."""
    rng = random.Random(11)
    parts = []
    offset = 0
    for _ in range(64):
        recs = [WriteRecord(b"k", rng.randbytes(1000), (), 1_700_000_000_000 + offset)
                for _ in range(16)]  # fmt: skip
        b = encode_batch_v2(offset, recs, partition_leader_epoch=offset // 200)
        parts.append(b.data)
        offset = b.last_offset + 1
    buf = b"\0" * 3 + b"".join(parts)
    view = memoryview(buf)[3:]
    _check_walk(bytes(view), 0, len(view), True, 0, _summary.INITIAL_STATE, 1 << 16, 1000, 0)
    got = _summary.summarize_v2(
        view, 0, len(view), 0, True, 0, _summary.INITIAL_STATE, 1 << 16, 1000
    )
    assert got[2] == crc32c_reference(bytes(view))
