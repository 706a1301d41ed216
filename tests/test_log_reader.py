"""The .log reader against bytes written by an implementation not written here (kafka-python),
with the broker's own rewrites applied where a producer's bytes differ from what is on disk."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from segment_lib.compression import Codec, compress, decompress
from segment_lib.control import ControlType, decode_control_record, encode_control_record
from segment_lib.errors import (
    CompressionError,
    CorruptBatchError,
    CorruptRecordError,
    CrcMismatchError,
    SegmentError,
    TornTailError,
    UnsupportedFormatError,
)
from segment_lib.log_file import LogBuffer, decode_batch, iter_batches, open_log
from segment_lib.records import Header, TimestampType

CODECS = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD]
RECORDS = [
    (b"k0", b"v0" * 50, [("h", b"1"), ("empty", b""), ("nul", None)]),
    (None, b"value-without-key", []),
    (b"key-without-value", None, [("trace", b"\x00\xff")]),
    (b"", b"", []),
]


def v2_batch(
    base_offset: int,
    codec: Codec,
    records=RECORDS,
    *,
    base_ts: int = 1_700_000_000_000,
    ts_step: int = 7,
    transactional: bool = False,
    producer_id: int = -1,
) -> bytes:
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=int(codec),
        is_transactional=transactional,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        batch_size=1 << 20,
    )
    for i, (k, v, h) in enumerate(records):
        b.append(i, timestamp=base_ts + i * ts_step, key=k, value=v, headers=h)
    data = bytearray(b.build())
    struct.pack_into(">q", data, 0, base_offset)  # the leader assigns the base offset
    return bytes(data)


def _recrc_v2(data: bytearray) -> None:
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))


def broker_log_append_time(batch: bytes, append_time: int) -> bytes:
    """What the broker does to a v2 batch of a LogAppendTime topic: set bit 3 and maxTimestamp."""
    data = bytearray(batch)
    (attrs,) = struct.unpack_from(">h", data, 21)
    struct.pack_into(">h", data, 21, attrs | 0x08)
    struct.pack_into(">q", data, 35, append_time)
    _recrc_v2(data)
    return bytes(data)


def control_batch(base_offset: int, producer_id: int, ctype: ControlType) -> bytes:
    key, value = encode_control_record(ctype, coordinator_epoch=3)
    data = bytearray(
        v2_batch(
            base_offset, Codec.NONE, [(key, value, [])], transactional=True, producer_id=producer_id
        )
    )
    (attrs,) = struct.unpack_from(">h", data, 21)
    struct.pack_into(">h", data, 21, attrs | 0x20)
    _recrc_v2(data)
    return bytes(data)


def legacy_wrapper(
    magic: int,
    codec: Codec,
    first_offset: int,
    values: list[bytes],
    *,
    base_ts: int = 1_500_000_000_000,
    log_append_time: int | None = None,
) -> bytes:
    """A shallow legacy message set as the broker stores it (offsets and timestamps assigned)."""
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=int(codec), batch_size=1 << 20)
    for i, v in enumerate(values):
        inner_offset = i if magic == 1 else first_offset + i
        b.append(inner_offset, timestamp=base_ts + i, key=b"k%d" % i, value=v)
    data = bytearray(b.build())
    if codec is Codec.NONE:
        # uncompressed: each message already carries its own (absolute) offset for magic 0;
        # for magic 1 rewrite them to absolute offsets as the broker assigns them
        pos, i = 0, 0
        while pos < len(data):
            struct.pack_into(">q", data, pos, first_offset + i)
            size = struct.unpack_from(">i", data, pos + 8)[0]
            pos += 12 + size
            i += 1
        return bytes(data)
    struct.pack_into(">q", data, 0, first_offset + len(values) - 1)  # wrapper = last offset
    if magic == 1:
        ts = base_ts + len(values) - 1 if log_append_time is None else log_append_time
        attrs = data[17] | (0x08 if log_append_time is not None else 0)
        data[17] = attrs
        struct.pack_into(">q", data, 18, ts)
        struct.pack_into(">I", data, 12, zlib.crc32(bytes(data[16:])))
    return bytes(data)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.label)
def test_v2_batches_of_every_codec_decode_to_what_was_written(codec: Codec) -> None:
    buf = v2_batch(100, codec) + v2_batch(104, codec, base_ts=1_700_000_001_000)
    batches = list(iter_batches(buf))
    assert [(b.base_offset, b.last_offset, b.record_count) for b in batches] == [
        (100, 103, 4),
        (104, 107, 4),
    ]
    assert all(b.codec is codec and b.magic == 2 for b in batches)
    assert batches[1].position == batches[0].size == len(v2_batch(100, codec))
    records = decode_batch(buf, batches[0])
    assert [(r.key, r.value) for r in records] == [(k, v) for k, v, _ in RECORDS]
    assert [r.headers for r in records] == [tuple(Header(*h) for h in hs) for _, _, hs in RECORDS]
    assert [r.timestamp for r in records] == [1_700_000_000_000 + 7 * i for i in range(4)]
    assert [r.offset for r in records] == [100, 101, 102, 103]
    assert batches[0].max_timestamp == 1_700_000_000_021


def test_log_append_time_gives_every_record_the_batch_max_timestamp() -> None:
    buf = broker_log_append_time(v2_batch(0, Codec.LZ4), 1_800_000_000_000)
    (batch,) = iter_batches(buf)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in decode_batch(buf, batch)} == {1_800_000_000_000}
    # and kafka-python agrees
    foreign = MemoryRecords(buf).next_batch()
    assert {r.timestamp for r in foreign} == {1_800_000_000_000}


def test_transactional_and_control_batches_are_flagged_and_markers_decoded() -> None:
    buf = (
        v2_batch(0, Codec.NONE, transactional=True, producer_id=42)
        + control_batch(4, 42, ControlType.ABORT)
        + control_batch(5, 42, ControlType.COMMIT)
    )
    data, abort, commit = iter_batches(buf)
    assert data.is_transactional and not data.is_control and data.producer_id == 42
    assert abort.is_control and commit.is_control
    markers = [
        decode_control_record(r.key, r.value) for b in (abort, commit) for r in decode_batch(buf, b)
    ]
    assert [(m.type, m.coordinator_epoch) for m in markers] == [
        (ControlType.ABORT, 3),
        (ControlType.COMMIT, 3),
    ]
    foreign = MemoryRecords(buf)
    foreign.next_batch()
    assert next(iter(foreign.next_batch())).abort


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize(
    "codec", [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4], ids=lambda c: c.label
)
def test_legacy_message_sets_with_wrappers_read_with_absolute_offsets(
    magic: int, codec: Codec
) -> None:
    values = [b"alpha", b"beta" * 20, b"gamma"]
    buf = legacy_wrapper(magic, codec, 50, values) + legacy_wrapper(magic, codec, 53, [b"z"])
    log = LogBuffer(buf)
    got = [(r.offset, r.key, r.value) for _, r in log.iter_records()]
    assert got == [
        (50, b"k0", b"alpha"),
        (51, b"k1", b"beta" * 20),
        (52, b"k2", b"gamma"),
        (53, b"k0", b"z"),
    ]
    headers = list(log.batches())
    assert {h.magic for h in headers} == {magic}
    if codec is not Codec.NONE:
        assert (headers[0].base_offset, headers[0].last_offset, headers[0].record_count) == (
            50,
            52,
            3,
        )
    expected_ts = [-1] * 4 if magic == 0 else [1_500_000_000_000 + i for i in (0, 1, 2, 0)]
    assert [r.timestamp for _, r in log.iter_records()] == expected_ts


def test_magic1_wrapper_with_log_append_time_stamps_inner_messages() -> None:
    buf = legacy_wrapper(1, Codec.GZIP, 10, [b"a", b"b"], log_append_time=1_600_000_000_000)
    (batch,) = iter_batches(buf)
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in decode_batch(buf, batch)] == [1_600_000_000_000] * 2


def test_snappy_raw_and_xerial_framing_and_legacy_lz4_all_decompress() -> None:
    payload = b"kafka " * 5000
    from kafka.codec import lz4_encode_old_kafka, snappy_encode

    assert decompress(Codec.SNAPPY, snappy_encode(payload, xerial_compatible=True)) == payload
    assert decompress(Codec.SNAPPY, snappy_encode(payload, xerial_compatible=False)) == payload
    assert decompress(Codec.LZ4, lz4_encode_old_kafka(payload), legacy_lz4=True) == payload
    for codec in CODECS:
        assert decompress(codec, compress(codec, payload)) == payload
    assert (
        decompress(Codec.LZ4, compress(Codec.LZ4, payload, legacy_lz4=True), legacy_lz4=True)
        == payload
    )


def test_crc_mismatch_names_file_and_batch_position(tmp_path: Path) -> None:
    first = v2_batch(0, Codec.NONE)
    data = bytearray(first + v2_batch(4, Codec.NONE))
    data[len(first) + 70] ^= 0x01  # a byte inside the second batch's records
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    with open_log(path) as log, pytest.raises(CrcMismatchError) as err:
        list(log.batches())
    assert err.value.path == str(path) and err.value.position == len(first)
    assert str(path) in str(err.value) and f"byte {len(first)}" in str(err.value)
    assert err.value.stored != err.value.computed


def test_legacy_crc_mismatch_is_detected() -> None:
    data = bytearray(legacy_wrapper(1, Codec.NONE, 0, [b"hello"]))
    data[-1] ^= 0xFF
    with pytest.raises(CrcMismatchError) as err:
        list(iter_batches(bytes(data)))
    assert err.value.position == 0


def test_torn_final_batch_is_a_distinct_expected_condition(tmp_path: Path) -> None:
    whole = v2_batch(0, Codec.NONE) + v2_batch(4, Codec.NONE)
    path = tmp_path / "00000000000000000000.log"
    for cut in (len(whole) - 1, len(v2_batch(0, Codec.NONE)) + 5):
        path.write_bytes(whole[:cut])
        with open_log(path) as log, pytest.raises(TornTailError) as err:
            list(log.batches())
        assert err.value.position == len(v2_batch(0, Codec.NONE))
        assert not isinstance(err.value, CorruptBatchError)
        with open_log(path) as log:
            assert [b.base_offset for b in log.batches(allow_torn_tail=True)] == [0]
            assert log.torn_tail_position == len(v2_batch(0, Codec.NONE))


def test_corrupt_length_mid_file_is_corruption_not_a_torn_tail(tmp_path: Path) -> None:
    """A length field bumped past the end of the file while valid batches follow used to read
    as a torn tail (allow_torn_tail silently dropped the rest of the file)."""
    first, second, third = (v2_batch(o, Codec.NONE) for o in (0, 4, 8))
    data = bytearray(first + second + third)
    struct.pack_into(">i", data, len(first) + 8, 1 << 30)  # the second batch's length
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    for allow in (False, True):
        with open_log(path) as log, pytest.raises(CorruptBatchError) as err:
            list(log.batches(allow_torn_tail=allow))
        assert not isinstance(err.value, TornTailError)
        assert err.value.path == str(path) and err.value.position == len(first) + 8
        assert f"starts at byte {len(first) + len(second)}" in err.value.detail


def test_without_tail_resync_a_length_past_the_end_is_a_torn_tail_unsearched() -> None:
    """``tail_resync=False`` (a chunked reader's chunks before the object's end): the batch
    whose length runs past the end is reported as a torn tail at its start, without the search
    that would call it a corrupt length field; the batches before it are yielded as before."""
    first, second, third = (v2_batch(o, Codec.NONE) for o in (0, 4, 8))
    data = bytearray(first + second + third)
    struct.pack_into(">i", data, len(first) + 8, 1 << 30)  # the second batch's length
    with pytest.raises(CorruptBatchError):
        list(iter_batches(bytes(data)))
    got = []
    with pytest.raises(TornTailError) as err:
        for h in iter_batches(bytes(data), tail_resync=False):
            got.append(h.base_offset)
    assert got == [0]
    assert not isinstance(err.value, CorruptBatchError)
    assert err.value.position == len(first)


def test_torn_tail_holding_an_older_batch_in_its_bytes_stays_a_torn_tail() -> None:
    """Only a batch *after* the last good one counts as "something valid follows"; an earlier
    batch's bytes inside the torn remainder (a record value holding a batch) do not."""
    inner = v2_batch(0, Codec.NONE)
    carrier = v2_batch(4, Codec.NONE, [(b"k", inner, [])])
    data = v2_batch(0, Codec.NONE) + carrier[:-1]
    log = LogBuffer(data)
    assert [b.base_offset for b in log.batches(allow_torn_tail=True)] == [0]
    assert log.torn_tail_position == len(v2_batch(0, Codec.NONE))


def test_zero_filled_preallocated_tail_stops_like_a_torn_tail() -> None:
    buf = v2_batch(0, Codec.NONE) + bytes(4096)
    log = LogBuffer(buf)
    assert len(list(log.batches(allow_torn_tail=True))) == 1
    assert log.torn_tail_position == len(v2_batch(0, Codec.NONE))


def test_unknown_magic_and_short_size_are_typed_errors_at_their_byte() -> None:
    data = bytearray(v2_batch(0, Codec.NONE))
    data[16] = 7
    with pytest.raises(UnsupportedFormatError) as err:
        list(iter_batches(bytes(data)))
    assert err.value.position == 16
    data = bytearray(v2_batch(0, Codec.NONE))
    struct.pack_into(">i", data, 8, 20)
    with pytest.raises(CorruptBatchError) as err2:
        list(iter_batches(bytes(data)))
    assert err2.value.position == 8


def test_corrupt_compressed_payload_raises_compression_error() -> None:
    data = bytearray(v2_batch(0, Codec.ZSTD))
    data[70:80] = b"\xff" * 10
    _recrc_v2(data)
    (batch,) = iter_batches(bytes(data))
    with pytest.raises(CompressionError) as err:
        decode_batch(bytes(data), batch)
    assert err.value.position is not None and err.value.position >= 61


def test_record_overrunning_its_batch_raises_corrupt_record_error() -> None:
    data = bytearray(v2_batch(0, Codec.NONE, [(b"k", b"v", [])]))
    data[61] = 0x7E  # record length varint: 63, far more than is left
    _recrc_v2(data)
    (batch,) = iter_batches(bytes(data))
    with pytest.raises(CorruptRecordError) as err:
        decode_batch(bytes(data), batch)
    assert err.value.position == 61


def test_every_real_log_reads_and_agrees_with_kafka_python(real_broker_data: Path) -> None:
    files = sorted(real_broker_data.rglob("*.log"))
    assert len(files) > 80
    compared = 0
    for path in files:
        with open_log(path) as log:
            ours = [
                (r.offset, r.timestamp, r.key, r.value, [tuple(h) for h in r.headers])
                for _, r in log.iter_records(allow_torn_tail=True, include_control=True)
            ]
            valid = log.torn_tail_position or len(log)
            raw = bytes(log.data[:valid])
        theirs = []
        foreign = MemoryRecords(raw)
        while (batch := foreign.next_batch()) is not None:
            assert batch.validate_crc(), path
            for r in batch:
                theirs.append(
                    (
                        r.offset,
                        r.timestamp,
                        r.key,
                        r.value,
                        [tuple(h) for h in getattr(r, "headers", [])],
                    )
                )
        assert ours == theirs, path
        compared += len(ours)
    assert compared > 100_000


def test_segment_error_is_the_only_base_callers_need() -> None:
    for cls in (
        CrcMismatchError,
        TornTailError,
        CompressionError,
        UnsupportedFormatError,
        CorruptRecordError,
    ):
        assert issubclass(cls, SegmentError)


@pytest.mark.parametrize(
    "filler",
    [
        bytes(5000),  # zero runs: the magic byte is rare
        b"\x00\x02" * 2500,  # the magic byte everywhere, overlapping near-candidates
        bytes(range(256)) * 20,
    ],
)
@pytest.mark.parametrize("window", [1 << 20, 4096])
def test_find_next_batch_finds_the_first_valid_batch_after_any_bytes(
    filler: bytes, window: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # find_next_batch lives in batch_search (sniff re-exports it)
    from segment_lib import batch_search as sniff

    monkeypatch.setattr(sniff, "_WINDOW", window)  # batches straddling a window edge too
    batch = v2_batch(7, Codec.NONE)
    for shift in (0, 1, 3, 17):
        buf = filler[: len(filler) - shift] + batch + v2_batch(11, Codec.NONE)
        found = sniff.find_next_batch(buf, 1, len(buf))
        assert found is not None
        assert (found.position, found.base_offset) == (len(filler) - shift, 7)
        # a lower bound on the base offset skips the first one
        later = sniff.find_next_batch(buf, 1, len(buf), min_base_offset=8)
        assert later is not None and later.base_offset == 11
        # a batch that does not fit before the limit is not found
        assert sniff.find_next_batch(buf, 1, len(filler) - shift + len(batch) - 1) is None
