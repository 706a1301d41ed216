"""Property tests: broker-equivalent lookups equal brute force over randomized partitions.

Partitions are written by the broker-faithful writer with many small segments, sparse indexes,
out-of-order CreateTime timestamps, LogAppendTime, every codec, legacy formats, transactions
with commit and abort markers, and sometimes an active segment with a torn tail. The brute force
decodes every record with kafka-python (an implementation not written here) and takes the
earliest offset whose timestamp is >= T.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords
from kafka_archive_dev.writer import ManualClock, PartitionWriter

from segment_lib.compression import Codec
from segment_lib.lookup import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    find_offset,
    find_offset_for_timestamp,
)
from segment_lib.partition import PartitionView
from segment_lib.records import TimestampType

BASE_TS = 1_700_000_000_000


@st.composite
def partitions(draw: st.DrawFn) -> dict:
    fmt = draw(st.sampled_from([2, 2, 2, 1, 0]))
    codecs = [Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4] + ([Codec.ZSTD] if fmt == 2 else [])
    appends = []
    for _ in range(draw(st.integers(1, 60))):
        appends.append(
            {
                "n": draw(st.integers(1, 6)),
                "codec": draw(st.sampled_from(codecs)),
                # CreateTime goes backwards and forwards; the clock only moves forward
                "ts_delta": draw(st.integers(-20_000, 20_000)),
                "advance": draw(st.integers(0, 5_000)),
                "txn": draw(st.sampled_from([None, None, "commit", "abort"])) if fmt == 2 else None,
                "value_size": draw(st.integers(0, 300)),  # at most ~2 KB per append
            }
        )
    return {
        "format": fmt,
        "log_append_time": draw(st.booleans()) and fmt > 0,
        "segment_bytes": draw(st.integers(2200, 4000)),
        "index_interval_bytes": draw(st.integers(1, 1500)),
        "appends": appends,
        "active_torn_tail": draw(st.sampled_from([0, 0, 7, 40])),
    }


def _write(spec: dict, root: Path) -> Path:
    clock = ManualClock(BASE_TS)
    w = PartitionWriter(
        root,
        "orders",
        3,
        segment_bytes=spec["segment_bytes"],
        index_interval_bytes=spec["index_interval_bytes"],
        message_format=spec["format"],
        timestamp_type=(
            TimestampType.LOG_APPEND_TIME if spec["log_append_time"] else TimestampType.CREATE_TIME
        ),
        clock=clock,
        segment_index_bytes=4096,
    )
    pid = 1000
    for i, a in enumerate(spec["appends"]):
        clock.advance(a["advance"])
        records = [
            (b"k%d-%d" % (i, j), bytes([65 + j % 26]) * a["value_size"]) for j in range(a["n"])
        ]
        ts = max(0, clock() + a["ts_delta"])
        if a["txn"]:
            w.append(records, codec=a["codec"], producer_id=pid, transactional=True, timestamp=ts)
            clock.advance(1)
            (w.commit if a["txn"] == "commit" else w.abort)(pid)
            pid += 1
        else:
            w.append(records, codec=a["codec"], timestamp=ts)
    w.close(active=True, torn_tail_bytes=spec["active_torn_tail"])
    return w.dir


def _brute_force(view: PartitionView) -> list[tuple[int, int]]:
    """(offset, timestamp) of every record, control records included, via kafka-python."""
    out: list[tuple[int, int]] = []
    for seg in view.segments:
        data = seg.log.read_bytes()
        records = MemoryRecords(data)
        while (batch := records.next_batch()) is not None:
            out.extend((r.offset, r.timestamp if r.timestamp is not None else -1) for r in batch)
    return out


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(partitions(), st.data())
def test_lookups_equal_brute_force(spec: dict, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        view = PartitionView.open(_write(spec, Path(tmp)))
        records = _brute_force(view)
        assert records, "every generated partition holds records"
        stamps = sorted({t for _, t in records})
        targets = {0, stamps[0] - 1, stamps[-1], stamps[-1] + 1, BASE_TS}
        targets |= set(data.draw(st.lists(st.sampled_from(stamps), max_size=12)))
        targets |= {t + 1 for t in data.draw(st.lists(st.sampled_from(stamps), max_size=6))}
        for target in sorted(t for t in targets if t >= 0):
            expected = next(((o, t) for o, t in records if t >= target), (-1, -1))
            answer = find_offset_for_timestamp(view, target)
            assert (answer.offset, answer.timestamp) == expected, target
        offsets = [o for o, _ in records]
        for offset in data.draw(st.lists(st.sampled_from(offsets), max_size=10)):
            loc = find_offset(view, offset)
            assert loc is not None
            assert loc.batch_base_offset <= offset <= loc.batch_last_offset
        assert find_offset(view, offsets[-1] + 1) is None
        assert find_offset_for_timestamp(view, LATEST_TIMESTAMP).offset == offsets[-1] + 1
        assert find_offset_for_timestamp(view, EARLIEST_TIMESTAMP).offset == offsets[0]
        best = max(t for _, t in records)
        expected_max = next(o for o, t in records if t == best) if best >= 0 else -1
        assert find_offset_for_timestamp(view, MAX_TIMESTAMP).offset == expected_max
        SEGMENT_COUNTS.append(len(view.segments))


SEGMENT_COUNTS: list[int] = []


def test_the_generator_covered_many_segment_partitions() -> None:
    """The property test above is only meaningful if it saw multi-segment partitions."""
    if not SEGMENT_COUNTS:
        test_lookups_equal_brute_force()
    assert max(SEGMENT_COUNTS) >= 6
    assert sum(1 for n in SEGMENT_COUNTS if n > 1) >= len(SEGMENT_COUNTS) // 4
