"""The replay reader and planner against writer-made partitions uploaded to a local store.

Expected records come from the write events (tests/support/replay_data.py), not from the bytes.
"""

from __future__ import annotations

import random
import struct
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka_archive.replay.errors import (
    EmptyRangeError,
    ReplayConfigError,
    ReplayDataError,
    UnknownTopicError,
)
from kafka_archive.replay.execution.reader import PartitionReader, RawBatch
from kafka_archive.replay.planning.filters import KeyFilter
from kafka_archive.replay.planning.plan import (
    PartitionPlan,
    ReplaySpec,
    TargetSpec,
    build_plan,
    parse_position,
)
from kafka_archive.replay.planning.sources import SegmentsPlanSource
from kafka_archive.store import LocalStore
from kafka_archive.store.errors import StoreUnavailable

from segment_lib.errors import CorruptBatchError, CrcMismatchError, TornTailError
from segment_lib.txn_index import AbortedTxn, format_txn_index
from tests.support.replay_data import Expected, SourcePartition, write_source_topic

CLUSTER = "east"


@pytest.fixture(scope="module")
def archive(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[LocalStore, SegmentsPlanSource, dict[int, SourcePartition]]:
    root = tmp_path_factory.mktemp("replay-src")
    parts = write_source_topic(
        root, "orders", 3, seed=7, log_append_time_partition=2, leave_open=True
    )
    store = LocalStore(root / "store", fsync=False)
    source = SegmentsPlanSource.upload_log_dirs(store, CLUSTER, [p.dir for p in parts.values()])
    return store, source, parts


def spec(**kw: object) -> ReplaySpec:
    base: dict[str, object] = {
        "cluster": CLUSTER,
        "topic": "orders",
        "from": parse_position("earliest"),
        "target": TargetSpec(bootstrap_servers="127.0.0.1:1"),
    }
    base.update(kw)
    return ReplaySpec.model_validate(base)


def as_tuples(groups: object) -> list[tuple[object, ...]]:
    return [
        (r.offset, r.timestamp, r.key, r.value, tuple((h.key, h.value) for h in r.headers))
        for g in groups  # type: ignore[attr-defined]
        for r in (g.records() if isinstance(g, RawBatch) else g)
    ]


def exp_tuples(records: list[Expected]) -> list[tuple[object, ...]]:
    return [(e.offset, e.timestamp, e.key, e.value, e.headers) for e in records]


@pytest.mark.parametrize("raw", [False, True], ids=["decoded", "raw-batches"])
@pytest.mark.parametrize("read_ahead", [False, True])
@pytest.mark.parametrize("chunk", [512, 4096, 1 << 20])
def test_full_range_equals_committed_view(archive, chunk: int, read_ahead: bool, raw: bool) -> None:  # type: ignore[no-untyped-def]
    store, source, parts = archive
    plan = build_plan(spec(), source)
    assert [p.partition for p in plan.partitions] == [0, 1, 2]
    for pp in plan.partitions:
        sp = parts[pp.partition]
        assert pp.start_offset == 0 and pp.end_offset == sp.log_end_offset
        # a transaction left open: the plan stops at its first offset (the last stable offset)
        assert pp.deliver_end == sp.stable_offset < sp.log_end_offset
        assert len(pp.open_txns) == 1 and pp.open_txns[0][1] == sp.stable_offset
        reader = PartitionReader(
            store, pp, chunk_bytes=chunk, read_ahead=read_ahead, raw_batches=raw
        )
        groups = list(reader)
        assert as_tuples(groups) == exp_tuples(sp.expected)
        # raw batches are whole batches with consecutive offsets; the rest stays decoded
        raws = [g for g in groups if isinstance(g, RawBatch)]
        assert bool(raws) == raw
        for g in raws:
            assert [r.offset for r in g.records()] == list(
                range(g.header.base_offset, g.header.last_offset + 1)
            )
        assert reader.position == sp.stable_offset
        assert 0 < reader.stats.aborted_records <= sp.aborted_records  # (some lie above)
        assert reader.stats.control_batches > 0
        # the same plan without the catalog's stable offset: the reader finds the open
        # transaction in the bytes and stops at its first offset all the same
        unclipped = pp.model_copy(update={"stable_offset": None})
        blind = PartitionReader(
            store, unclipped, chunk_bytes=chunk, read_ahead=read_ahead, raw_batches=raw
        )
        assert as_tuples(list(blind)) == exp_tuples(sp.expected)
        assert blind.position == sp.stable_offset
        assert blind.stats.open_txn_records == sp.open_records
        assert blind.stats.held_records == sp.held_records
        assert blind.stats.open_txns == pp.open_txns


@pytest.mark.parametrize("raw", [False, True], ids=["decoded", "raw-batches"])
def test_sub_ranges_and_resume_points(archive, raw: bool) -> None:  # type: ignore[no-untyped-def]
    store, source, parts = archive
    rng = random.Random(3)
    for p, sp in parts.items():
        for _ in range(6):
            a = rng.randrange(0, sp.log_end_offset)
            b = rng.randrange(a, sp.log_end_offset + 1)
            plan = (
                build_plan(
                    spec(
                        partitions=[p],
                        to=parse_position(f"offset:{b}"),
                        **{"from": parse_position(f"offset:{a}")},
                    ),
                    source,
                )
                if b > a
                else None
            )
            if plan is None:
                continue
            pp = plan.partitions[0]
            want = [e for e in sp.expected if a <= e.offset < b]
            reader = PartitionReader(store, pp, chunk_bytes=2048, raw_batches=raw)
            groups = list(reader)
            assert as_tuples(groups) == exp_tuples(want)
            # resume after any group: the rest equals the remainder
            if groups:
                k = rng.randrange(len(groups))
                first = PartitionReader(store, pp, raw_batches=raw)
                it = iter(first)
                head = [next(it) for _ in range(k + 1)]
                rest = PartitionReader(store, pp, start_offset=first.position, raw_batches=raw)
                assert as_tuples(head) + as_tuples(rest) == exp_tuples(want)


def test_key_filter(archive) -> None:  # type: ignore[no-untyped-def]
    store, source, parts = archive
    plan = build_plan(spec(key_filter="regex:^p1r[0-9]+-k1[0-9]$"), source)
    kf = KeyFilter.parse("regex:^p1r[0-9]+-k1[0-9]$")
    pp = plan.partition(1)
    reader = PartitionReader(store, pp, key_filter=kf)
    want = [e for e in parts[1].expected if e.key is not None and kf.matches(e.key)]
    assert want, "the seed should produce matching keys"
    assert as_tuples(reader) == exp_tuples(want)
    assert reader.stats.filtered_records == len(parts[1].expected) - len(want)


def test_markers_alone_suffice_without_txnindex(archive) -> None:  # type: ignore[no-untyped-def]
    store, source, parts = archive
    pp = build_plan(spec(), source).partition(0)
    bare = pp.model_copy(
        update={
            "objects": [o.model_copy(update={"txn_index_key": None}) for o in pp.objects],
            "tail_objects": [],
        }
    )
    reader = PartitionReader(store, bare)
    assert as_tuples(reader) == exp_tuples(parts[0].expected)
    assert reader.stats.aborted_by_index == 0
    assert reader.stats.aborted_records == parts[0].aborted_records


def test_txnindex_contradicting_a_commit_marker(archive, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    store, source, parts = archive
    pp = build_plan(spec(), source).partition(0)
    # find a committed transactional record: claim in a fake index that it was aborted
    reader = PartitionReader(store, pp)
    list(reader)
    from segment_lib.log_file import iter_batches

    txn_batch = None
    for obj in pp.objects:
        data = store.get_bytes(obj.key)
        for h in iter_batches(data):
            if (
                h.is_transactional
                and not h.is_control
                and any(e.offset == h.base_offset for e in parts[0].expected)
            ):
                txn_batch = (obj, h)
                break
        if txn_batch:
            break
    assert txn_batch is not None
    obj, h = txn_batch
    store.put_bytes(
        "fake/liar.txnindex",
        format_txn_index(
            [AbortedTxn(h.producer_id, h.base_offset, h.last_offset + 1, h.last_offset + 2)]
        ),
    )
    lying = pp.model_copy(
        update={
            "objects": [
                o.model_copy(
                    update={"txn_index_key": "fake/liar.txnindex" if o.key == obj.key else None}
                )
                for o in pp.objects
            ]
        }
    )
    with pytest.raises(ReplayDataError, match="says COMMIT"):
        list(PartitionReader(store, lying))


def _corrupted(archive, key: str, mutate: Callable[[bytearray, int], None]):  # type: ignore[no-untyped-def]
    """(store, the middle batch's header, a plan of partition 1's first object stored again
    under ``key`` after ``mutate(bytes, that batch's position)``)."""
    from segment_lib.log_file import iter_batches

    store, source, _parts = archive
    pp = build_plan(spec(), source).partition(1)
    obj = pp.objects[0]
    data = bytearray(store.get_bytes(obj.key))
    headers = list(iter_batches(bytes(data)))
    victim = headers[len(headers) // 2]
    mutate(data, victim.position)
    store.put_bytes(key, bytes(data))
    bad = pp.model_copy(
        update={
            "end_offset": obj.last_offset + 1,
            "objects": [obj.model_copy(update={"key": key, "start": 0, "end": len(data)})],
            "tail_objects": [],
        }
    )
    return store, victim, bad


def test_corrupt_object_names_key_and_position(archive) -> None:  # type: ignore[no-untyped-def]
    def flip_last_byte(data: bytearray, position: int) -> None:
        size = 12 + struct.unpack_from(">i", data, position + 8)[0]
        data[position + size - 1] ^= 0xFF

    store, victim, bad = _corrupted(archive, "corrupt/seg.log", flip_last_byte)
    for chunk in (700, 1 << 20):
        with pytest.raises(CrcMismatchError) as info:
            list(PartitionReader(store, bad, chunk_bytes=chunk))
        assert info.value.path == "corrupt/seg.log"
        assert info.value.position == victim.position


def test_corrupt_length_field_read_in_chunks_is_corruption_at_its_position(archive) -> None:  # type: ignore[no-untyped-def]
    """A batch length bumped past the object's end mid-object: whatever the chunk size (chunks
    before the object's end do not search past a cut batch, see iter_batches' tail_resync),
    the reader raises CorruptBatchError at the length field, naming the object."""

    def bump_length(data: bytearray, position: int) -> None:
        struct.pack_into(">i", data, position + 8, 1 << 30)

    store, victim, bad = _corrupted(archive, "corrupt/len.log", bump_length)
    for chunk in (700, 4096, 1 << 20):
        with pytest.raises(CorruptBatchError) as info:
            list(PartitionReader(store, bad, chunk_bytes=chunk))
        assert not isinstance(info.value, TornTailError)
        assert info.value.path == "corrupt/len.log"
        assert info.value.position == victim.position + 8


def test_plan_time_semantics_match_brute_force(archive) -> None:  # type: ignore[no-untyped-def]
    store, source, parts = archive
    sp = parts[0]
    times = sorted(e.timestamp for e in sp.expected)
    sp_all = _all_record_times(store, build_plan(spec(partitions=[0]), source).partitions[0])

    # brute force ListOffsets over every data record (committed or not): the first offset with
    # timestamp >= T, or the log end when there is none
    def lookup(ts: int) -> int:
        cands = [o for o, x in sp_all if x >= ts]
        return min(cands) if cands else sp.log_end_offset

    for t in (times[0] - 1, times[len(times) // 3], times[2 * len(times) // 3], times[-1] + 1):
        for t2 in (t + 1, t + 5_000, times[-1] + 10):
            request = spec(
                partitions=[0], to=parse_position(str(t2)), **{"from": parse_position(str(t))}
            )
            if lookup(t) >= lookup(t2):
                with pytest.raises(EmptyRangeError):
                    build_plan(request, source)
                continue
            pp = build_plan(request, source).partitions[0]
            assert (pp.start_offset, pp.end_offset) == (lookup(t), lookup(t2))


def _all_record_times(store: LocalStore, pp: PartitionPlan) -> list[tuple[int, int]]:
    from segment_lib.log_file import decode_batch, iter_batches

    out = []
    for obj in pp.objects + pp.tail_objects:
        data = store.get_bytes(obj.key)
        for h in iter_batches(data):
            if not h.is_control:
                out += [(r.offset, r.timestamp) for r in decode_batch(data, h)]
    return out


def test_plan_guard_rails(archive) -> None:  # type: ignore[no-untyped-def]
    _store, source, parts = archive
    with pytest.raises(UnknownTopicError):
        build_plan(spec(topic="nope"), source)
    with pytest.raises(UnknownTopicError, match=r"partitions 7 of"):
        build_plan(spec(partitions=[0, 7]), source)
    with pytest.raises(EmptyRangeError, match="inverted"):
        build_plan(
            spec(to=parse_position("1700000000000"), **{"from": parse_position("1700000500000")}),
            source,
        )
    with pytest.raises(EmptyRangeError, match="inverted"):
        build_plan(
            spec(to=parse_position("offset:5"), **{"from": parse_position("offset:9")}), source
        )
    with pytest.raises(EmptyRangeError, match="nothing to replay"):
        build_plan(spec(**{"from": parse_position("latest")}), source)
    with pytest.raises(EmptyRangeError):
        build_plan(spec(**{"from": parse_position("2100-01-01T00:00:00Z")}), source)
    with pytest.raises(ReplayConfigError):
        parse_position("offset:-3")
    with pytest.raises(ReplayConfigError):
        parse_position("yesterday-ish")
    with pytest.raises(ReplayConfigError, match="regex"):
        build_plan(spec(key_filter="regex:(unclosed"), source)
    with pytest.raises(ReplayConfigError, match="partition 1"):
        build_plan(spec(**{"from": parse_position("offset:0=3")}), source)
    # the same request plans the same replay id; force makes a new one
    a = build_plan(spec(), source)
    b = build_plan(spec(), source)
    c = build_plan(spec(force=True), source, now_ms=123)
    assert a.replay_id == b.replay_id != c.replay_id
    assert a.total_records >= sum(len(p.expected) for p in parts.values())
    assert ReplaySpec.model_validate_json(a.spec.model_dump_json(by_alias=True)) == a.spec


def test_per_partition_offsets(archive) -> None:  # type: ignore[no-untyped-def]
    store, source, parts = archive
    plan = build_plan(
        spec(partitions=[0, 2], **{"from": parse_position("offset:0=10,2=20")}), source
    )
    assert [(p.partition, p.start_offset) for p in plan.partitions] == [(0, 10), (2, 20)]
    got = as_tuples(PartitionReader(store, plan.partition(2)))
    assert got == exp_tuples([e for e in parts[2].expected if e.offset >= 20])


class RecordingStore:  # the ObjectStore methods the reader uses
    """A store in front of another that records every ranged read (and which thread made it)
    and can fail the reads of one object from a byte position on."""

    def __init__(self, inner: LocalStore, fail_key: str | None = None, fail_from: int = -1) -> None:
        self.inner = inner
        self.uri = "mem://recording"  # not file: -> read-ahead on by default
        self.reads: list[tuple[str, int, int, str]] = []
        self.fail_key, self.fail_from = fail_key, fail_from

    def get_bytes(self, key: str) -> bytes:
        return self.inner.get_bytes(key)

    def get_range(self, key: str, start: int, end: int) -> bytes:
        self.reads.append((key, start, end, threading.current_thread().name))
        if key == self.fail_key and start >= self.fail_from:
            raise StoreUnavailable("injected outage", uri=self.uri, key=key)
        return self.inner.get_range(key, start, end)


@pytest.mark.parametrize("chunk", [700, 4096, 60_000])
def test_read_ahead_reads_what_plain_reads_read(archive, chunk: int) -> None:  # type: ignore[no-untyped-def]
    store, source, parts = archive
    for pp in build_plan(spec(), source).partitions:
        plain, ahead = RecordingStore(store), RecordingStore(store)
        plain_reader = PartitionReader(plain, pp, chunk_bytes=chunk, read_ahead=False)  # type: ignore[arg-type]
        want = as_tuples(plain_reader)
        reader = PartitionReader(ahead, pp, chunk_bytes=chunk)  # type: ignore[arg-type]
        assert reader.read_ahead
        assert as_tuples(reader) == want == exp_tuples(parts[pp.partition].expected)
        assert reader.stats.bytes_read == sum(e - s for _k, s, e, _t in plain.reads)
        # the prefetches did the work: every range the plain reader read was read, most of them
        # by the read-ahead thread; a guess that was not used costs one extra read at most per
        # object (the last chunk's successor), never a different result
        used = [(k, s, e) for k, s, e, _t in plain.reads]
        got = [(k, s, e) for k, s, e, _t in ahead.reads]
        assert set(used) <= set(got)
        assert len(got) - len(used) <= len(pp.objects) + len(pp.tail_objects)
        if len(used) > 2 * len(pp.objects):  # chunks followed chunks: some were prefetched
            assert any(t.startswith("replay-read-ahead") for *_r, t in ahead.reads)
    # the default for a local (file:) store is off
    assert not PartitionReader(store, build_plan(spec(), source).partition(0)).read_ahead


def test_read_ahead_failures_surface_where_plain_reads_fail(archive) -> None:  # type: ignore[no-untyped-def]
    store, source, _parts = archive
    pp = build_plan(spec(), source).partition(1)
    obj = pp.objects[0]
    fail_from = obj.start + 9 * (obj.end - obj.start) // 10
    seen: dict[bool, tuple[int, str | None]] = {}
    for read_ahead in (False, True):
        failing = RecordingStore(store, fail_key=obj.key, fail_from=fail_from)
        reader = PartitionReader(failing, pp, chunk_bytes=4096, read_ahead=read_ahead)  # type: ignore[arg-type]
        yielded = 0
        with pytest.raises(StoreUnavailable) as info:
            for group in reader:
                yielded += len(group)
        seen[read_ahead] = (yielded, info.value.key)
        if read_ahead:  # the failing range was first asked for by the read-ahead thread
            assert any(
                s >= fail_from and t.startswith("replay-read-ahead")
                for _k, s, _e, t in failing.reads
            )
    # the same records came out before the same error
    assert seen[True] == seen[False] and seen[False][0] > 0
