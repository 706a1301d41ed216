"""The demo's data, produced through a real Kafka cluster (:mod:`kafka_archive_dev.local_kafka`).

:func:`produce_demo_data` creates the demo's topics on the source cluster and writes a few seconds
of traffic in rounds, so that segments roll (``segment.ms`` 1 s) while it runs:

* ``orders`` (3 partitions, zstd): a transactional producer, one transaction per partition and
  round, every fourth one aborted (after its records are delivered, so they are in the log);
  keys, JSON values, headers with a repeated name and a null
  value;
* ``payments`` (2 partitions, lz4, ``LogAppendTime``): an idempotent producer;
* ``clicks`` (2 partitions, snappy): CreateTime stamps that go backwards now and then;
* ``customers`` (1 partition, gzip, compacted, the cleaner running): the same keys over and over;
* consumer group ``billing`` reads ``orders`` (read_committed) and commits after every round;
  each commit's moment and offsets are kept, so the demo can check the catalog's answer for
  "where was the group at T";
* the cluster's metadata changes while it runs (:data:`METADATA_LOG_CONFIG` makes its
  ``__cluster_metadata`` log roll and snapshot every 2 s, so the archive takes it): an ACL for
  the group's principal, and ``orders``' retention changed halfway (what ``catalog
  topic-history``, ``topic-config --at`` and ``acls --at`` show, and what a faithful
  ``replay run --create-topic`` copies).

Records carry the wall-clock time they were produced at; :attr:`DemoTraffic.moments` are the
instants between rounds, so a moment in the middle of the traffic is a good T.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

__all__ = [
    "DEMO_TOPICS",
    "METADATA_LOG_CONFIG",
    "DemoTraffic",
    "GroupCommit",
    "produce_demo_data",
]

ORDERS = "orders"
GROUP = "billing"
#: the source cluster's settings that make its metadata log archivable within the demo (the
#: defaults roll it after 7 days and snapshot it hourly: nothing would be archived), and an
#: authorizer, so that the demo's ACL is real (PLAINTEXT clients are ANONYMOUS: super user)
METADATA_LOG_CONFIG: dict[str, str] = {
    "metadata.log.segment.ms": "2000",
    "metadata.log.max.snapshot.interval.ms": "2000",
    "metadata.max.idle.interval.ms": "200",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}
#: orders' retention before and after the change halfway through the traffic
RETENTION_MS = ("604800000", "1209600000")
#: topic -> (partitions, topic configs)
DEMO_TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    ORDERS: (
        3,
        {"segment.ms": "1000", "compression.type": "producer", "retention.ms": RETENTION_MS[0]},
    ),
    "payments": (2, {"segment.ms": "1000", "message.timestamp.type": "LogAppendTime"}),
    "clicks": (2, {"segment.ms": "1000"}),
    "customers": (
        1,
        {
            "segment.ms": "1000",
            "cleanup.policy": "compact",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "1000",
        },
    ),
}


@dataclass(frozen=True, slots=True)
class GroupCommit:
    """Group ``billing`` committed ``offsets`` (partition -> next offset) at ``at_ms``."""

    at_ms: int
    offsets: dict[int, int]


@dataclass
class DemoTraffic:
    """What :func:`produce_demo_data` wrote."""

    start_ms: int = 0
    end_ms: int = 0
    moments: list[int] = field(default_factory=list)
    commits: list[GroupCommit] = field(default_factory=list)
    records: dict[str, int] = field(default_factory=dict)
    aborted_transactions: int = 0
    #: when orders' retention.ms became RETENTION_MS[1] (0: not changed)
    retention_changed_ms: int = 0

    def group_at(self, at_ms: int) -> dict[int, int]:
        """The group's committed offsets as of ``at_ms`` (the newest commit at or before it)."""
        out: dict[int, int] = {}
        for c in self.commits:
            if c.at_ms <= at_ms:
                out.update(c.offsets)
        return out


def create_topics(bootstrap: str, replication: int) -> None:
    """Create the demo topics (and wait for them)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [
            NewTopic(name, partitions, replication, config=config)
            for name, (partitions, config) in DEMO_TOPICS.items()
        ],
        operation_timeout=30,
    )
    for future in futures.values():
        future.result(60)


def change_metadata(bootstrap: str) -> int:
    """Grant the group's principal READ on ``orders`` and raise ``orders``' retention.ms to
    :data:`RETENTION_MS` [1]; the wall time just before (what ``--at`` must not see yet)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    before = int(time.time() * 1000)
    acl = AclBinding(
        ResourceType.TOPIC,
        ORDERS,
        ResourcePatternType.LITERAL,
        f"User:{GROUP}",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([acl]).values():
        future.result(60)
    change = ConfigResource(
        ResourceType.TOPIC,
        ORDERS,
        incremental_configs=[
            ConfigEntry(
                "retention.ms", RETENTION_MS[1], incremental_operation=AlterConfigOpType.SET
            )
        ],
    )
    for future in admin.incremental_alter_configs([change]).values():
        future.result(60)
    return before


def _headers(i: int) -> list[tuple[str, str | bytes | None]]:
    return [("source", b"shop"), ("trace", f"t-{i}".encode()), ("trace", None)]


def produce_demo_data(
    bootstrap: str,
    *,
    rounds: int = 8,
    per_round: int = 40,
    seed: int = 0,
    replication: int = 3,
    change_metadata_halfway: bool = False,
) -> DemoTraffic:
    """Create the demo topics and produce ``rounds`` rounds of traffic, ~1.1 s apart
    (``change_metadata_halfway``: :func:`change_metadata` after half the rounds; the cluster
    needs an authorizer, see :data:`METADATA_LOG_CONFIG`)."""
    rng = random.Random(seed)
    create_topics(bootstrap, replication)
    base = {"bootstrap.servers": bootstrap, "linger.ms": 5}
    txn = Producer({**base, "transactional.id": f"demo-orders-{seed}", "compression.type": "zstd"})
    plain = {
        "payments": Producer({**base, "enable.idempotence": True, "compression.type": "lz4"}),
        "clicks": Producer({**base, "compression.type": "snappy"}),
        "customers": Producer({**base, "compression.type": "gzip"}),
    }
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([ORDERS])
    txn.init_transactions(60)
    traffic = DemoTraffic(start_ms=int(time.time() * 1000))
    counter = 0
    try:
        for round_no in range(rounds):
            if round_no:
                time.sleep(1.1)  # past segment.ms: the next append rolls a new segment
                traffic.moments.append(int(time.time() * 1000))
            if change_metadata_halfway and round_no == rounds // 2:
                traffic.retention_changed_ms = change_metadata(bootstrap)
            for partition in range(DEMO_TOPICS[ORDERS][0]):
                txn.begin_transaction()
                for _ in range(per_round):
                    counter += 1
                    value = json.dumps({"order": counter, "amount": rng.randint(1, 500)})
                    txn.produce(
                        ORDERS,
                        key=f"order-{counter}".encode(),
                        value=value.encode(),
                        partition=partition,
                        headers=_headers(counter),
                    )
                if (round_no + partition) % 4 == 3:
                    # delivered first: the aborted records reach the log (what the demo shows),
                    # and an abort right after produce() can reach the coordinator before the
                    # partition is added to the transaction, which fails it fatally with
                    # INVALID_TXN_STATE (librdkafka#4849; seen once in CI on Kafka 4.x)
                    if txn.flush(60):
                        raise KafkaException("demo orders producer did not deliver in 60 s")
                    txn.abort_transaction(60)
                    traffic.aborted_transactions += 1
                else:
                    txn.commit_transaction(60)
                    traffic.records[ORDERS] = traffic.records.get(ORDERS, 0) + per_round
            now = int(time.time() * 1000)
            for i in range(per_round):
                plain["payments"].produce(
                    "payments", key=f"pay-{i % 7}".encode(), value=f"{round_no}:{i}".encode()
                )
                # clicks go back in time now and then, as real clients' clocks do
                stamp = now - (rng.randint(0, 5000) if i % 5 == 0 else 0)
                plain["clicks"].produce(
                    "clicks", value=f"click {round_no}:{i}".encode(), timestamp=stamp
                )
                plain["customers"].produce(
                    "customers",
                    key=f"customer-{i % 10}".encode(),
                    value=None if i % 13 == 12 else f"v{round_no}".encode(),
                )
            for name, producer in plain.items():
                if producer.flush(60):
                    raise KafkaException(f"demo producer of {name} did not deliver in 60 s")
                traffic.records[name] = traffic.records.get(name, 0) + per_round
            traffic.commits.append(_consume_and_commit(consumer))
    finally:
        consumer.close()
    traffic.end_ms = int(time.time() * 1000)
    return traffic


def _consume_and_commit(consumer: Consumer) -> GroupCommit:
    """Read what is there (up to ~1 s) and commit the group's position synchronously."""
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        msgs = consumer.consume(500, 0.2)
        if not msgs and consumer.assignment():
            break
    positions = consumer.position(consumer.assignment())
    offsets = [tp for tp in positions if tp.offset >= 0]
    if offsets:
        consumer.commit(offsets=offsets, asynchronous=False)
    return GroupCommit(int(time.time() * 1000), {tp.partition: tp.offset for tp in offsets})


def wait_for_metadata_roll(log_dirs: list[Path], timeout_s: float = 60.0) -> None:
    """Wait until every node's ``__cluster_metadata-0`` has rolled a new segment since this
    call (the changes made before it are then in rolled segments, which the archive takes)."""
    dirs = [d / "__cluster_metadata-0" for d in log_dirs]
    before = [set(d.glob("*.log")) for d in dirs]
    deadline = time.monotonic() + timeout_s
    while any(not set(d.glob("*.log")) - seen for d, seen in zip(dirs, before, strict=True)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"the metadata log did not roll within {timeout_s:g} s: {dirs}")
        time.sleep(0.2)


def broker_offsets_for_time(
    bootstrap: str, topic: str, partitions: int, at_ms: int
) -> dict[int, int]:
    """The broker's own ListOffsets answer at ``at_ms`` (-1: no record at or after it)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "demo-list-offsets"})
    try:
        answer = consumer.offsets_for_times(
            [TopicPartition(topic, p, at_ms) for p in range(partitions)], timeout=30
        )
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in answer}
