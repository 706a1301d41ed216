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

from segment_lib.compression import Codec
from segment_lib.records import Header, TimestampType
from segment_lib.writer.broker_writer import CONSUMER_OFFSETS, BrokerWriter
from segment_lib.writer.deterministic import ManualClock, new_topic_id
from segment_lib.writer.encode import WriteRecord
from segment_lib.writer.partition_writer import PartitionWriter

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


# TODO(issue 11): split: the demo cluster's script of topics, groups and faults
def write_demo_cluster(  # noqa: C901, PLR0912, PLR0915
    root: str | os.PathLike[str],
    *,
    seed: int = 0,
    brokers: int = 3,
    offsets_partitions: int = 10,
    steps: int = 400,
    start_ms: int = 1_700_000_000_000,
) -> DemoCluster:
    """Write the demo cluster under ``root`` (which should be empty) and describe it."""
    if brokers < 1:
        raise ValueError("need at least one broker")
    rng = random.Random(seed)
    root = Path(root)
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
    topics = {t.name: t for t in _TOPICS}
    replicas: dict[tuple[str, int], list[int]] = {}
    leaders: dict[tuple[str, int], PartitionWriter] = {}
    # small segments so that commits roll into archivable segments during the demo
    offsets_config: dict[str, object] = {"segment_bytes": 1024, "index_interval_bytes": 256}
    specs = [*_TOPICS, TopicSpec(CONSUMER_OFFSETS, offsets_partitions, 3, offsets_config)]
    for spec in specs:
        rf = min(spec.replication_factor, brokers)
        for p in range(spec.partitions):
            hosts = [(p + spec.name.__len__() + i) % brokers for i in range(rf)]
            replicas[(spec.name, p)] = hosts
            leader = writers[hosts[0]]
            config = _config(spec)
            if spec.name == CONSUMER_OFFSETS:
                leaders[(spec.name, p)] = leader.consumer_offsets(p, **config)
            else:
                leaders[(spec.name, p)] = leader.partition(spec.name, p, **config)

    committed: dict[str, dict[tuple[str, int], int]] = {g: {} for g in _GROUPS}
    order_seq = 0
    user_ids = [f"user-{i:03d}" for i in range(40)]
    open_txns: dict[tuple[str, int], tuple[int, int]] = {}  # partition -> (producer id, batches)
    fetch_sizes = (700, 4096, 64 * 1024)

    def replicate_all() -> None:
        for key, hosts in replicas.items():
            leader = leaders[key]
            spec = topics.get(key[0])
            config = _config(spec if spec is not None else TopicSpec(CONSUMER_OFFSETS, 0, 0))
            for b in hosts[1:]:
                writers[b].replicate(leader, fetch_max_bytes=rng.choice(fetch_sizes), **config)

    for step in range(steps):
        clock.advance(rng.randint(200, 6000))
        action = rng.random()
        if action < 0.35:
            p = rng.randrange(3)
            n = rng.randint(1, 12)
            recs = []
            for _ in range(n):
                order_seq += 1
                okey = f"order-{order_seq:06d}".encode()
                value = (
                    None
                    if rng.random() < 0.03
                    else f'{{"id":{order_seq},"amount":{rng.randint(1, 99999)}}}'.encode()
                )
                headers = (
                    (Header("source", b"web"), Header("trace", None)) if rng.random() < 0.5 else ()
                )
                recs.append(WriteRecord(okey, value, headers, clock() - rng.randint(0, 50)))
            leaders[("orders", p)].append(
                recs,
                codec=_CODECS[order_seq % len(_CODECS)],
                producer_id=7000 + p,
                producer_epoch=0,
            )
        elif action < 0.55:
            p = rng.randrange(2)
            tp = ("payments", p)
            pw = leaders[tp]
            if tp in open_txns:
                pid, nb = open_txns[tp]
                if nb >= 3 or rng.random() < 0.4:
                    if rng.random() < 0.3:
                        pw.abort(pid, 0, coordinator_epoch=1)
                    else:
                        pw.commit(pid, 0, coordinator_epoch=1)
                    del open_txns[tp]
                    continue
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
            open_txns[tp] = (pid, nb + 1)
        elif action < 0.72:
            p = rng.randrange(2)
            leaders[("clicks", p)].append(
                [
                    WriteRecord(None, f"/page/{rng.randrange(100)}".encode(), (), clock() - 5)
                    for _ in range(rng.randint(1, 8))
                ],
                codec=Codec.LZ4,
            )
        elif action < 0.80:
            codec = rng.choice((Codec.NONE, Codec.GZIP, Codec.SNAPPY))
            leaders[("legacy-v1", 0)].append(
                [
                    (f"k{rng.randrange(50)}".encode(), rng.randbytes(30))
                    for _ in range(rng.randint(1, 5))
                ],
                codec=codec,
            )
            leaders[("legacy-v0", 0)].append(
                [(None, rng.randbytes(25)) for _ in range(rng.randint(1, 5))],
                codec=rng.choice((Codec.NONE, Codec.LZ4, Codec.GZIP)),
            )
        elif action < 0.92:
            # an idempotent loader writes multi-record batches early on, then single updates
            # follow: compaction leaves gaps inside batches and may empty the loader's last
            # batch (kept header-only for its producer state)
            loader = step < steps // 2
            n = rng.randint(1, 3) if loader else 1
            updates = []
            for _ in range(n):
                uid = rng.choice(user_ids)
                value = None if rng.random() < 0.15 else f'{{"name":"{uid}","v":{step}}}'.encode()
                updates.append((uid.encode(), value))
            if loader:
                leaders[("users", 0)].append(updates, producer_id=500, producer_epoch=0)
            else:
                leaders[("users", 0)].append(updates)
        else:
            group = rng.choice(list(_GROUPS))
            offsets = {}
            for topic in _GROUPS[group]:
                for p in range(topics[topic].partitions):
                    pw = leaders[(topic, p)]
                    # a consumer's position: somewhere up to the (stable) end
                    offsets[(topic, p)] = rng.randint(
                        committed[group].get((topic, p), 0), pw.last_stable_offset
                    )
            writer = writers[replicas[(CONSUMER_OFFSETS, _partition(group, offsets_partitions))][0]]
            writer.commit_offsets(group, offsets, leader_epoch=0)
            committed[group].update(offsets)
        if step % 60 == 59:
            replicate_all()

    # close open transactions so the demo's data is complete (one left open on purpose)
    for i, (tp, (pid, _)) in enumerate(sorted(open_txns.items())):
        if i > 0:
            leaders[tp].commit(pid, 0, coordinator_epoch=1)
    replicate_all()
    for hosts in [replicas[("users", 0)]]:
        for b in hosts:
            writers[b].compact("users", 0)
    crashed = brokers - 1
    for b, w in writers.items():
        if b == crashed:
            torn = {
                key: 20 for key, hosts in replicas.items() if hosts[0] == b and key[0] == "orders"
            }
            w.close(active=True, torn_tail_bytes=torn)
        else:
            w.close()
    return DemoCluster(
        root=root,
        cluster_id=cluster_id,
        broker_dirs={b: list(w.log_dirs) for b, w in writers.items()},
        topics=topics,
        replicas=replicas,
        log_end_offsets={k: pw.log_end_offset for k, pw in leaders.items()},
        committed=committed,
        crashed_broker=crashed,
        start_ms=start_ms,
        end_ms=clock(),
    )


def _config(spec: TopicSpec) -> dict[str, Any]:
    config: dict[str, Any] = dict(spec.config)
    config.setdefault("segment_index_bytes", _INDEX_BYTES)
    if spec.name == CONSUMER_OFFSETS:
        config.setdefault("segment_bytes", 16 * 1024)
    return config


def _partition(group: str, n: int) -> int:
    from segment_lib.consumer_offsets import partition_for_group

    return partition_for_group(group, n)
