"""A fake cluster for the fetch archiver's unit tests (tests/test_fetch_archiver*.py): one topic
``orders`` whose partitions are lists of encoded batches, answering the archiver's questions
(Metadata, DescribeConfigs, ListOffsets, OffsetsForLeaderEpoch, Fetch) as a broker would."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from kafka_archive.archive.fetch.report import FetchReport
from kafka_archive.archive.fetch.runner import FetchOptions, run_fetch_archive
from kafka_archive.archive.manifest import SegmentManifest, iter_manifests
from kafka_archive.kafka_protocol.fetch import (
    OFFSET_OUT_OF_RANGE,
    ClusterTopics,
    EpochEnd,
    FetchedPartition,
    TopicInfo,
)
from kafka_archive.store import ObjectStore
from kafka_archive_dev.writer import WriteRecord, encode_batch_v2, encode_control_batch

from segment_lib.control import ControlType
from segment_lib.log_file import iter_batches

UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
FENCED = 74  # FENCED_LEADER_EPOCH
UNKNOWN_TOPIC_ID = 100

TOPIC = "orders"


def batch(base: int, n: int = 2, *, ts: int = 1_000, **kw: Any) -> bytes:
    records = [WriteRecord(b"k", bytes(20), (), ts) for _ in range(n)]
    return encode_batch_v2(base, records, **kw).data


def txn(base: int, pid: int, n: int = 2) -> bytes:
    return batch(base, n, producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True)


def abort(offset: int, pid: int) -> bytes:
    return encode_control_batch(
        offset, ControlType.ABORT, producer_id=pid, producer_epoch=0, timestamp=1_000
    ).data


class FakeCluster:
    """One topic; per partition a list of batches, a log start offset and a high watermark.
    A Fetch returns whole batches from the one holding the offset, at most ``limit`` bytes,
    then the first ``tail`` bytes of the next one (a partial batch).

    ``topic_id`` (None: a cluster without topic ids), ``leaders`` and ``leader_epochs`` are
    what Metadata says; a Fetch by another topic id than ``topic_id`` is answered
    UNKNOWN_TOPIC_ID; ``before_fetch`` (if set) runs before each Fetch with the number of
    Fetches so far (a cluster changing mid-run)."""

    def __init__(self, logs: Mapping[int, list[bytes]], *, limit: int = 300, tail: int = 25):
        self.logs = {p: list(bs) for p, bs in logs.items()}
        self.log_start = dict.fromkeys(self.logs, 0)
        self.limit = limit
        self.tail = tail
        self.fetches = 0
        self.topic_id: str | None = None
        self.leaders = dict.fromkeys(self.logs, 1)
        self.leader_epochs: dict[int, int] = {}
        self.before_fetch: Callable[[int], None] | None = None
        self.deleted = False  # the topic is gone
        self.epoch_asks: list[dict[int, tuple[int, int]]] = []

    def hw(self, p: int) -> int:
        last = next(iter_batches(self.logs[p][-1])).last_offset if self.logs[p] else -1
        return last + 1

    def topics(self) -> ClusterTopics:
        if self.deleted:
            return ClusterTopics("kc", {})
        return ClusterTopics(
            "kc",
            {
                TOPIC: TopicInfo(
                    TOPIC,
                    self.topic_id,
                    False,
                    {p: self.leaders.get(p, 1) for p in self.logs},
                    dict(self.leader_epochs),
                )
            },
        )

    def configs(self, topic: str, names: Sequence[str]) -> dict[str, str]:
        return {"segment.bytes": "400", "index.interval.bytes": "100"}

    def list_offsets(
        self, node: int, topic: str, partitions: Iterable[int], timestamp: int
    ) -> dict[int, int]:
        return {p: self.log_start.get(p, 0) if timestamp == -2 else self.hw(p) for p in partitions}

    def epoch_ends(
        self, node: int, topic: str, asks: Mapping[int, tuple[int, int]]
    ) -> dict[int, EpochEnd]:
        """As LeaderEpochFileCache.endOffsetFor over the batches' partition leader epochs."""
        self.epoch_asks.append(dict(asks))
        out = {}
        for p, (_current, epoch) in asks.items():
            starts: dict[int, int] = {}
            for b in self.logs[p]:
                h = next(iter_batches(b))
                starts.setdefault(h.partition_leader_epoch, h.base_offset)
            known = sorted(starts)
            if known and known[-1] == epoch:
                out[p] = EpochEnd(0, epoch, self.hw(p))
            elif not known or epoch > known[-1]:
                out[p] = EpochEnd(0, -1, -1)
            else:
                higher = min(e for e in known if e > epoch)
                floor = max((e for e in known if e <= epoch), default=epoch)
                out[p] = EpochEnd(0, floor, starts[higher])
        return out

    def fetch(
        self,
        node: int,
        asks: Mapping[tuple[str, int], int],
        *,
        max_wait_ms: int,
        topic_ids: Mapping[str, str | None] | None = None,
        leader_epochs: Mapping[tuple[str, int], int] | None = None,
    ) -> list[FetchedPartition]:
        if self.before_fetch is not None:
            self.before_fetch(self.fetches)
        self.fetches += 1
        out = []
        for (topic, p), offset in asks.items():
            asked_id = (topic_ids or {}).get(topic)
            if self.deleted or (asked_id and self.topic_id and asked_id != self.topic_id):
                code = UNKNOWN_TOPIC_OR_PARTITION if self.deleted else UNKNOWN_TOPIC_ID
                out.append(FetchedPartition(topic, p, code, -1, -1, -1, b""))
                continue
            epoch = (leader_epochs or {}).get((topic, p), -1)
            if node != self.leaders.get(p, 1) or 0 <= epoch != self.leader_epochs.get(p, epoch):
                code = NOT_LEADER_OR_FOLLOWER if node != self.leaders.get(p, 1) else FENCED
                out.append(FetchedPartition(topic, p, code, -1, -1, -1, b""))
                continue
            if offset < self.log_start.get(p, 0) or offset > self.hw(p):
                out.append(FetchedPartition(topic, p, OFFSET_OUT_OF_RANGE, -1, -1, -1, b""))
                continue
            data = b""
            kept = [b for b in self.logs[p] if next(iter_batches(b)).last_offset >= offset]
            for i, b in enumerate(kept):
                if len(data) + len(b) > self.limit and data:
                    data += kept[i][: self.tail]
                    break
                data += b
            hw = self.hw(p)
            out.append(FetchedPartition(topic, p, 0, hw, hw, self.log_start.get(p, 0), data))
        return out

    def close(self) -> None:
        pass


def fake_log(n_batches: int, start: int = 0) -> list[bytes]:
    """Batches of 2 records; a transaction of producer 7 aborted in the middle."""
    out, offset = [], start
    for i in range(n_batches):
        if i == n_batches // 2:
            out += [txn(offset, 7), abort(offset + 2, 7)]
            offset += 3
        out.append(batch(offset))
        offset += 2
    return out


def run(cluster: FakeCluster, store: ObjectStore, **options: Any) -> FetchReport:
    """An ``--until-caught-up`` run of cluster ``c1`` (``options``: more of FetchOptions)."""
    return run_fetch_archive(
        cluster="c1",
        source=cluster,
        store=store,
        options=FetchOptions(until_caught_up=True, **options),
    )


def manifests(store: ObjectStore, partition: int = 0) -> list[SegmentManifest]:
    return sorted(iter_manifests(store, "c1", TOPIC, partition), key=lambda m: m.base_offset)


def stored_batches(store: ObjectStore, partition: int = 0) -> list[bytes]:
    out = []
    for m in manifests(store, partition):
        data = store.get_bytes(m.log_file.key)
        out += [data[h.position : h.next_position] for h in iter_batches(data)]
    return out
