"""Batch-level replay's parts without a cluster (issue 27): re-stamping a stored batch, the
re-encoding decisions, which replays may send whole batches, how broker errors are classed.

A re-stamped batch is read back by kafka-python's own record decoder (an implementation not
written here): CRC, producer fields, flags and every record must be what the producer meant.
The end-to-end proof against real brokers is tests/real_kafka/test_batch_replay_real.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatch
from kafka_archive.kafka_protocol.transactions import (
    TxnFatal,
    TxnFenced,
    TxnRetry,
    TxnTooLarge,
    _raise_for,
)
from kafka_archive.replay.execution.batch_engine import (
    MIN_RECORDS_PER_BATCH,
    BatchPartitionReplay,
    batch_level,
    partition_replay,
    small_batches,
)
from kafka_archive.replay.execution.batch_send import sendable_as_stored
from kafka_archive.replay.planning.plan import (
    PlannedSegment,
    ReplaySpec,
    TargetSpec,
    build_plan,
    parse_position,
    records_per_batch,
)
from kafka_archive.replay.planning.sources import SegmentsPlanSource
from kafka_archive.store import LocalStore
from kafka_archive_dev.writer.partition_writer import ManualClock, PartitionWriter

from segment_lib.batch_encode import WriteRecord, encode_batch_v2, restamp_v2
from segment_lib.compression import Codec
from segment_lib.errors import CorruptBatchError
from segment_lib.log_file import iter_batches
from segment_lib.records import Header

RECORDS = [
    WriteRecord(
        b"k%d" % i,
        b"value-%d" % i * (i + 1),
        (Header("h", b"x"), Header("n", None)),
        1_700_000_000_000 + 7 * i,
    )
    for i in range(50)
]


@pytest.mark.parametrize("codec", list(Codec))
@pytest.mark.parametrize("log_append", [False, True])
def test_restamp_keeps_the_records_and_sets_the_producer_fields(
    codec: Codec, log_append: bool
) -> None:
    stored = encode_batch_v2(
        4242,
        RECORDS,
        codec=codec,
        producer_id=77,
        producer_epoch=3,
        base_sequence=900,
        transactional=False,
        partition_leader_epoch=12,
        log_append_time=1_800_000_000_000 if log_append else None,
    )
    header = next(iter_batches(stored.data))
    out = restamp_v2(
        memoryview(stored.data), header, producer_id=5, producer_epoch=9, base_sequence=123
    )
    theirs = DefaultRecordBatch(bytes(out))
    assert theirs.validate_crc()
    assert (theirs.base_offset, theirs.leader_epoch) == (0, -1)
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence) == (5, 9, 123)
    assert theirs.is_transactional and not theirs.is_control_batch
    assert theirs.compression_type == int(codec)
    assert theirs.timestamp_type == int(log_append)
    assert theirs.last_offset_delta == len(RECORDS) - 1
    # the record bytes are the stored ones: everything after the producer fields is unchanged
    assert out[61:] == stored.data[61:]
    got = [(r.offset, r.key, r.value, [tuple(h) for h in r.headers]) for r in theirs]
    assert got == [
        (i, r.key, r.value, [(h.key, h.value) for h in r.headers]) for i, r in enumerate(RECORDS)
    ]
    # and the original's own CRC no longer matches what was changed (the check could fail)
    assert out[17:21] != stored.data[17:21]


def test_restamp_refuses_a_control_batch_and_a_wrong_length() -> None:
    from segment_lib.batch_encode import encode_control_batch
    from segment_lib.control import ControlType

    marker = encode_control_batch(
        10, ControlType.COMMIT, producer_id=1, producer_epoch=0, timestamp=1
    )
    h = next(iter_batches(marker.data))
    with pytest.raises(CorruptBatchError, match="control"):
        restamp_v2(marker.data, h, producer_id=1, producer_epoch=0, base_sequence=0)
    data = encode_batch_v2(0, RECORDS[:2]).data
    h = next(iter_batches(data))
    with pytest.raises(CorruptBatchError, match="whole magic 2 batch"):
        restamp_v2(data[:-1], h, producer_id=1, producer_epoch=0, base_sequence=0)


def test_only_create_time_batches_with_their_own_first_timestamp_go_as_stored() -> None:
    create = next(iter_batches(encode_batch_v2(0, RECORDS).data))
    assert sendable_as_stored(create)
    lat = next(iter_batches(encode_batch_v2(0, RECORDS, log_append_time=5).data))
    assert not sendable_as_stored(lat)  # a consumer saw the append time on every record
    cleaned = encode_batch_v2(0, RECORDS, delete_horizon_ms=1_900_000_000_000).data
    assert not sendable_as_stored(next(iter_batches(cleaned)))
    no_ts = [r._replace(timestamp=-1) for r in RECORDS]
    assert not sendable_as_stored(next(iter_batches(encode_batch_v2(0, no_ts).data)))


def _spec(**kw: Any) -> ReplaySpec:
    return ReplaySpec.model_validate(
        {
            "cluster": "c",
            "topic": "t",
            "from": parse_position("earliest"),
            "target": TargetSpec(bootstrap_servers="localhost:9092"),
            **kw,
        }
    )


@pytest.mark.parametrize(
    ("kw", "why"),
    [
        ({}, None),
        ({"rate_limit_records": 100.0}, None),
        ({"replay_path": "records"}, "asked for"),
        ({"partition_mapping": "murmur2"}, "re-partitions"),
        ({"provenance_headers": True}, "provenance"),
        ({"key_filter": "prefix:a"}, "key filter"),
        ({"preserve_timestamps": False}, "timestamps"),
        ({"rate_limit_mb": 5.0}, "MB/s"),
    ],
)
def test_which_replays_send_whole_batches(kw: dict[str, Any], why: str | None) -> None:
    got = batch_level(_spec(**kw), {"bootstrap.servers": "localhost:9092"})
    assert (got is None) if why is None else (got is not None and why in got), got


def test_a_setting_the_protocol_client_cannot_apply_means_the_record_path() -> None:
    why = batch_level(
        _spec(), {"bootstrap.servers": "h:1", "sasl.oauthbearer.client.secret": "s3cret"}
    )
    assert why is not None and "sasl.oauthbearer.client.secret" in why
    assert "s3cret" not in why  # a setting is named, never its value


@pytest.mark.parametrize(
    ("code", "cls"),
    [(6, TxnRetry), (51, TxnRetry), (45, TxnRetry), (90, TxnFenced), (47, TxnFenced),
     (10, TxnTooLarge), (18, TxnTooLarge), (87, TxnFatal), (29, TxnFatal), (53, TxnFatal)],
)  # fmt: skip
def test_broker_errors_are_classed(code: int, cls: type[Exception]) -> None:
    with pytest.raises(cls, match=rf"Produce to t-0: the broker answered .*\({code}\): why"):
        _raise_for(code, "Produce to t-0", "why")
    _raise_for(0, "Produce to t-0")  # no error: nothing raised


# -- auto: the path per partition by the size of its archived batches ----------------------------

#: records per source batch of each partition: small (a Java producer's 16 KB batch.size), the
#: threshold itself, large
_BATCH_SIZES = {0: 8, 1: MIN_RECORDS_PER_BATCH, 2: 300}


@pytest.fixture(scope="module")
def sized(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalStore, SegmentsPlanSource]:
    root = tmp_path_factory.mktemp("batch-sizes")
    dirs = []
    for p, size in _BATCH_SIZES.items():
        clock = ManualClock(1_700_000_000_000)
        pw = PartitionWriter(root, "sized", p, segment_bytes=4096, clock=clock)
        for start in range(0, 1200, size):
            pw.append(
                [
                    WriteRecord(b"k", b"v" * 40, (), clock.advance(1))
                    for _ in range(min(size, 1200 - start))
                ],
                codec=Codec.LZ4,
            )
        pw.close()
        dirs.append(pw.dir)
    store = LocalStore(root / "store", fsync=False)
    return store, SegmentsPlanSource.upload_log_dirs(store, "east", dirs)


def _sized_spec(**kw: Any) -> ReplaySpec:
    return ReplaySpec.model_validate(
        {
            "cluster": "east",
            "topic": "sized",
            "from": parse_position("earliest"),
            "target": TargetSpec(bootstrap_servers="127.0.0.1:1"),
            **kw,
        }
    )


def test_the_plan_knows_each_partitions_mean_batch_size(
    sized: tuple[LocalStore, SegmentsPlanSource],
) -> None:
    _store, source = sized
    plan = build_plan(_sized_spec(), source)
    got = {pp.partition: pp.records_per_batch for pp in plan.partitions}
    assert got == {p: pytest.approx(size) for p, size in _BATCH_SIZES.items()}
    # several segments per partition (the mean is over the segments read, not the first one)
    assert all(len(pp.objects) > 1 for pp in plan.partitions)


def test_records_per_batch_counts_only_the_segments_read_and_unknown_counts() -> None:
    segs = [
        PlannedSegment(key="a", base_offset=0, last_offset=99, size=1, record_count=100,
                       batch_count=50),
        PlannedSegment(key="b", base_offset=100, last_offset=1099, size=1, record_count=1000,
                       batch_count=2),
    ]  # fmt: skip
    assert records_per_batch(segs, 0, 1100) == pytest.approx(1100 / 52)
    assert records_per_batch(segs, 100, 1100) == 500
    assert records_per_batch(segs, 0, 50) == 2
    assert records_per_batch(segs, 2000, 3000) is None  # nothing read
    unknown = [segs[0].model_copy(update={"batch_count": None}), segs[1]]
    assert records_per_batch(unknown, 0, 1100) is None
    assert records_per_batch(unknown, 100, 1100) == 500  # the unknown one is not read


def test_small_batches_names_the_mean_and_the_way_out() -> None:
    why = small_batches(31.6)
    assert why is not None and "32 records on average" in why and "--replay-path batch" in why
    assert small_batches(MIN_RECORDS_PER_BATCH - 0.5) is not None
    assert small_batches(MIN_RECORDS_PER_BATCH) is None
    assert small_batches(None) is None  # a plan made before batches were counted


@pytest.mark.parametrize(
    ("path", "batches"),
    [("auto", {1, 2}), ("batch", {0, 1, 2}), ("records", set())],
)
def test_auto_replays_small_batches_record_by_record(
    sized: tuple[LocalStore, SegmentsPlanSource], path: str, batches: set[int]
) -> None:
    store, source = sized
    plan = build_plan(_sized_spec(replay_path=path), source)
    # the runner's answer for every partition, less the probe of the target (none here)
    why_not = batch_level(plan.spec, plan.spec.target.client_config())
    got = {
        p: partition_replay(plan, p, why_not=why_not, store=store, target_partitions=3)
        for p in _BATCH_SIZES
    }
    assert {p for p, r in got.items() if isinstance(r, BatchPartitionReplay)} == batches
    notes = {p: r.path_note for p, r in got.items()}
    if path == "auto":
        assert "8 records on average" in notes[0] and notes[0].startswith("record path: ")
        assert notes[1] == notes[2] == ""
    else:  # asked for: nothing to explain
        assert set(notes.values()) == {""}
