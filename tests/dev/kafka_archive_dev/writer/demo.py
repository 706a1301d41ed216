"""A deterministic, realistic multi-broker cluster on disk, for the demo and end-to-end tests.

:func:`write_demo_cluster` writes ``<root>/broker-<id>/<log dir>/...`` for several brokers with
two log dirs each, from a seed (same seed, same bytes):

* ``orders``: 3 partitions, replication factor 2, magic 2, every codec in turn, record headers,
  idempotent producer, small segments (several rolls, index entries).
* ``payments``: 2 partitions, replication factor 3, transactional producers with commits and
  aborts (control batches, ``.txnindex`` entries, producer snapshots with open transactions).
* ``clicks``: 2 partitions, LogAppendTime, lz4, time-based rolls (``segment.ms`` 10 minutes).
* ``legacy-v1`` / ``legacy-v0``: message format 1 (plain and gzip/snappy wrappers) and 0 (lz4
  with Kafka 0.8's header checksum, gzip).
* ``users``: a compacted topic with updates and tombstones (an idempotent loader's
  multi-record batches, then single updates), cleaned once on every replica.
* ``__consumer_offsets`` (``offsets_partitions`` partitions, replication factor up to 3):
  consumer groups committing their positions over time.

Followers fetch in chunks of varying size, so replicas roll and index at different points. All
brokers shut down cleanly except the last, left as if it crashed: active indexes preallocated
and one partition with a torn final batch.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_archive_dev.writer.broker_writer import CONSUMER_OFFSETS, BrokerWriter
from kafka_archive_dev.writer.deterministic import ManualClock, new_topic_id
from kafka_archive_dev.writer.encode import WriteRecord
from kafka_archive_dev.writer.partition_writer import PartitionWriter
from segment_lib.compression import Codec
from segment_lib.records import Header, TimestampType

__all__ = ["DemoCluster", "TopicSpec", "write_demo_cluster"]


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """A demo topic's layout and configs."""

    name: str
    partitions: int
    replication_factor: int
    config: dict[str, object] = field(default_factory=dict)


@dataclass(slots=True)
class DemoCluster:
    """What :func:`write_demo_cluster` wrote."""

    root: Path
    cluster_id: str
    broker_dirs: dict[int, list[Path]]
    topics: dict[str, TopicSpec]
    #: (topic, partition) -> broker ids hosting a replica, leader first
    replicas: dict[tuple[str, int], list[int]]
    #: (topic, partition) -> log end offset on the leader
    log_end_offsets: dict[tuple[str, int], int]
    #: group -> {(topic, partition): last committed offset}
    committed: dict[str, dict[tuple[str, int], int]]
    crashed_broker: int
    start_ms: int
    end_ms: int


_TOPICS = (
    TopicSpec("orders", 3, 2, {"segment_bytes": 4 * 1024, "index_interval_bytes": 1024}),
    TopicSpec("payments", 2, 3, {"segment_bytes": 6 * 1024, "index_interval_bytes": 1024}),
    TopicSpec(
        "clicks",
        2,
        2,
        {
            "segment_ms": 10 * 60 * 1000,
            "timestamp_type": TimestampType.LOG_APPEND_TIME,
            "index_interval_bytes": 1024,
        },
    ),
    TopicSpec("legacy-v1", 1, 1, {"message_format": 1, "segment_bytes": 4 * 1024}),
    TopicSpec("legacy-v0", 1, 1, {"message_format": 0, "segment_bytes": 4 * 1024}),
    TopicSpec("users", 1, 2, {"segment_bytes": 1024, "index_interval_bytes": 256}),
)
#: segment.index.bytes for every demo partition: small, so preallocated indexes stay small
_INDEX_BYTES = 64 * 1024
_CODECS = (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD)
_GROUPS = {
    "billing": ("orders", "payments"),
    "analytics": ("orders", "clicks"),
    "audit": ("payments", "users"),
}


#: fetch.max.bytes of the followers' fetches, chosen at random per replica and round
_FETCH_SIZES = (700, 4096, 64 * 1024)
#: the demo's steps replicate every this many steps (and once at the end)
_REPLICATE_EVERY = 60


def write_demo_cluster(
    root: str | os.PathLike[str],
    *,
    seed: int = 0,
    brokers: int = 3,
    offsets_partitions: int = 10,
    steps: int = 400,
    start_ms: int = 1_700_000_000_000,
) -> DemoCluster:
    """Write the demo cluster under ``root`` (which should be empty) and describe it.

    Three acts (:class:`_DemoScript`): the brokers and partitions are laid out, ``steps``
    random steps append to the topics and commit group offsets (followers fetch every
    ``_REPLICATE_EVERY`` steps), then the faults: one transaction left open, ``users``
    compacted, and the last broker closed as if it crashed.
    """
    if brokers < 1:
        raise ValueError("need at least one broker")
    script = _DemoScript.lay_out(
        Path(root),
        seed=seed,
        brokers=brokers,
        offsets_partitions=offsets_partitions,
        start_ms=start_ms,
    )
    for step in range(steps):
        script.step(step, steps)
    crashed = script.finish()
    return DemoCluster(
        root=script.root,
        cluster_id=script.cluster_id,
        broker_dirs={b: list(w.log_dirs) for b, w in script.writers.items()},
        topics=script.topics,
        replicas=script.replicas,
        log_end_offsets={k: pw.log_end_offset for k, pw in script.leaders.items()},
        committed=script.committed,
        crashed_broker=crashed,
        start_ms=start_ms,
        end_ms=script.clock(),
    )


@dataclass(slots=True)
class _DemoScript:
    """The demo cluster being written: its brokers, the leader of every partition, and the
    state of the random script (one ``random.Random`` drives every choice, in a fixed order:
    same seed, same bytes)."""

    root: Path
    rng: random.Random
    clock: ManualClock
    cluster_id: str
    offsets_partitions: int
    writers: dict[int, BrokerWriter]
    topics: dict[str, TopicSpec]
    #: (topic, partition) -> broker ids hosting a replica, leader first
    replicas: dict[tuple[str, int], list[int]] = field(default_factory=dict)
    leaders: dict[tuple[str, int], PartitionWriter] = field(default_factory=dict)
    committed: dict[str, dict[tuple[str, int], int]] = field(
        default_factory=lambda: {g: {} for g in _GROUPS}
    )
    order_seq: int = 0
    user_ids: list[str] = field(default_factory=lambda: [f"user-{i:03d}" for i in range(40)])
    #: payments partition -> (producer id, batches) of its open transaction
    open_txns: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def lay_out(
        cls, root: Path, *, seed: int, brokers: int, offsets_partitions: int, start_ms: int
    ) -> _DemoScript:
        """The brokers (two log dirs each) and a leader for every partition of the demo topics
        and ``__consumer_offsets``; nothing appended yet."""
        clock = ManualClock(start_ms)
        cluster_id = new_topic_id(f"demo-cluster-{seed}")
        writers = {
            b: BrokerWriter(
                root / f"broker-{b}",
                b,
                log_dirs=("data-0", "data-1"),
                cluster_id=cluster_id,
                clock=clock,
                offsets_partitions=offsets_partitions,
            )
            for b in range(brokers)
        }
        script = cls(
            root=root,
            rng=random.Random(seed),
            clock=clock,
            cluster_id=cluster_id,
            offsets_partitions=offsets_partitions,
            writers=writers,
            topics={t.name: t for t in _TOPICS},
        )
        # small segments so that commits roll into archivable segments during the demo
        offsets_config: dict[str, object] = {"segment_bytes": 1024, "index_interval_bytes": 256}
        for spec in [*_TOPICS, TopicSpec(CONSUMER_OFFSETS, offsets_partitions, 3, offsets_config)]:
            script._place(spec)
        return script

    def _place(self, spec: TopicSpec) -> None:
        brokers = len(self.writers)
        rf = min(spec.replication_factor, brokers)
        for p in range(spec.partitions):
            hosts = [(p + len(spec.name) + i) % brokers for i in range(rf)]
            self.replicas[(spec.name, p)] = hosts
            leader = self.writers[hosts[0]]
            config = _config(spec)
            if spec.name == CONSUMER_OFFSETS:
                self.leaders[(spec.name, p)] = leader.consumer_offsets(p, **config)
            else:
                self.leaders[(spec.name, p)] = leader.partition(spec.name, p, **config)

    # -- the random steps ----------------------------------------------------------------------

    def step(self, step: int, steps: int) -> None:
        """One step of the script: time passes, one random action, and every
        ``_REPLICATE_EVERY`` steps the followers fetch (unless the step ended a transaction)."""
        self.clock.advance(self.rng.randint(200, 6000))
        action = self.rng.random()
        if action < 0.35:
            self._orders()
        elif action < 0.55:
            if self._payments():
                return  # a transaction ended: this step does not replicate
        elif action < 0.72:
            self._clicks()
        elif action < 0.80:
            self._legacy()
        elif action < 0.92:
            self._users(step, steps)
        else:
            self._group_commit()
        if step % _REPLICATE_EVERY == _REPLICATE_EVERY - 1:
            self.replicate_all()

    def _orders(self) -> None:
        """An idempotent producer's batch of orders (every codec in turn, some headers, a few
        null values)."""
        rng, clock = self.rng, self.clock
        p = rng.randrange(3)
        recs = []
        for _ in range(rng.randint(1, 12)):
            self.order_seq += 1
            okey = f"order-{self.order_seq:06d}".encode()
            value = (
                None
                if rng.random() < 0.03
                else f'{{"id":{self.order_seq},"amount":{rng.randint(1, 99999)}}}'.encode()
            )
            headers = (
                (Header("source", b"web"), Header("trace", None)) if rng.random() < 0.5 else ()
            )
            recs.append(WriteRecord(okey, value, headers, clock() - rng.randint(0, 50)))
        self.leaders[("orders", p)].append(
            recs,
            codec=_CODECS[self.order_seq % len(_CODECS)],
            producer_id=7000 + p,
            producer_epoch=0,
        )

    def _payments(self) -> bool:
        """A transactional batch of payments, or the end (commit or abort) of a partition's
        open transaction; True when a transaction ended."""
        rng = self.rng
        p = rng.randrange(2)
        tp = ("payments", p)
        pw = self.leaders[tp]
        if tp in self.open_txns:
            pid, nb = self.open_txns[tp]
            if nb >= 3 or rng.random() < 0.4:
                if rng.random() < 0.3:
                    pw.abort(pid, 0, coordinator_epoch=1)
                else:
                    pw.commit(pid, 0, coordinator_epoch=1)
                del self.open_txns[tp]
                return True
        else:
            pid, nb = 9000 + rng.randrange(4) * 2 + p, 0
        pw.append(
            [
                WriteRecord(f"pay-{rng.randrange(10**6)}".encode(), rng.randbytes(40))
                for _ in range(rng.randint(1, 6))
            ],
            codec=rng.choice(_CODECS),
            producer_id=pid,
            producer_epoch=0,
            transactional=True,
        )
        self.open_txns[tp] = (pid, nb + 1)
        return False

    def _clicks(self) -> None:
        """A batch of page clicks (no key, lz4; the topic stamps LogAppendTime)."""
        rng = self.rng
        p = rng.randrange(2)
        self.leaders[("clicks", p)].append(
            [
                WriteRecord(None, f"/page/{rng.randrange(100)}".encode(), (), self.clock() - 5)
                for _ in range(rng.randint(1, 8))
            ],
            codec=Codec.LZ4,
        )

    def _legacy(self) -> None:
        """One batch on each legacy topic (message formats 1 and 0)."""
        rng = self.rng
        codec = rng.choice((Codec.NONE, Codec.GZIP, Codec.SNAPPY))
        self.leaders[("legacy-v1", 0)].append(
            [
                (f"k{rng.randrange(50)}".encode(), rng.randbytes(30))
                for _ in range(rng.randint(1, 5))
            ],
            codec=codec,
        )
        self.leaders[("legacy-v0", 0)].append(
            [(None, rng.randbytes(25)) for _ in range(rng.randint(1, 5))],
            codec=rng.choice((Codec.NONE, Codec.LZ4, Codec.GZIP)),
        )

    def _users(self, step: int, steps: int) -> None:
        """Updates (and tombstones) of the compacted ``users`` topic."""
        # an idempotent loader writes multi-record batches early on, then single updates
        # follow: compaction leaves gaps inside batches and may empty the loader's last
        # batch (kept header-only for its producer state)
        rng = self.rng
        loader = step < steps // 2
        n = rng.randint(1, 3) if loader else 1
        updates = []
        for _ in range(n):
            uid = rng.choice(self.user_ids)
            value = None if rng.random() < 0.15 else f'{{"name":"{uid}","v":{step}}}'.encode()
            updates.append((uid.encode(), value))
        if loader:
            self.leaders[("users", 0)].append(updates, producer_id=500, producer_epoch=0)
        else:
            self.leaders[("users", 0)].append(updates)

    def _group_commit(self) -> None:
        """A consumer group commits a position, at or past its last, on every partition of
        its topics (to the ``__consumer_offsets`` partition the group hashes to)."""
        rng = self.rng
        group = rng.choice(list(_GROUPS))
        committed = self.committed[group]
        offsets = {}
        for topic in _GROUPS[group]:
            for p in range(self.topics[topic].partitions):
                pw = self.leaders[(topic, p)]
                # a consumer's position: somewhere up to the (stable) end
                offsets[(topic, p)] = rng.randint(
                    committed.get((topic, p), 0), pw.last_stable_offset
                )
        coordinator = self.replicas[(CONSUMER_OFFSETS, _partition(group, self.offsets_partitions))]
        self.writers[coordinator[0]].commit_offsets(group, offsets, leader_epoch=0)
        committed.update(offsets)

    def replicate_all(self) -> None:
        """Every follower fetches from its leader, in chunks of a random size."""
        for key, hosts in self.replicas.items():
            leader = self.leaders[key]
            spec = self.topics.get(key[0])
            config = _config(spec if spec is not None else TopicSpec(CONSUMER_OFFSETS, 0, 0))
            for b in hosts[1:]:
                self.writers[b].replicate(
                    leader, fetch_max_bytes=self.rng.choice(_FETCH_SIZES), **config
                )

    # -- the end: faults and shutdown -----------------------------------------------------------

    def finish(self) -> int:
        """Close the open transactions but one, replicate, compact ``users`` on every replica
        and shut the brokers down, the last one as if it crashed (active indexes preallocated,
        a torn final batch on each ``orders`` partition it leads); returns that broker's id."""
        for i, (tp, (pid, _)) in enumerate(sorted(self.open_txns.items())):
            if i > 0:
                self.leaders[tp].commit(pid, 0, coordinator_epoch=1)
        self.replicate_all()
        for b in self.replicas[("users", 0)]:
            self.writers[b].compact("users", 0)
        crashed = len(self.writers) - 1
        for b, w in self.writers.items():
            if b == crashed:
                torn = {
                    key: 20
                    for key, hosts in self.replicas.items()
                    if hosts[0] == b and key[0] == "orders"
                }
                w.close(active=True, torn_tail_bytes=torn)
            else:
                w.close()
        return crashed


def _config(spec: TopicSpec) -> dict[str, Any]:
    config: dict[str, Any] = dict(spec.config)
    config.setdefault("segment_index_bytes", _INDEX_BYTES)
    if spec.name == CONSUMER_OFFSETS:
        config.setdefault("segment_bytes", 16 * 1024)
    return config


def _partition(group: str, n: int) -> int:
    from segment_lib.consumer_offsets import partition_for_group

    return partition_for_group(group, n)
