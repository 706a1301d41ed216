"""Faithful replays against a REAL Kafka cluster: ``replay run --create-topic`` creates the
target topic as the source topic was at the replay's start (partition count and config
overrides from the metadata history), and an existing target whose configs would change the
data is warned about, or refused, before anything is sent.

The history is written through the history service's public API, the way point 5 of issue 12
records a cluster without a metadata log: Admin API snapshots of the real cluster, taken at
recorded times (``snapshot_from_admin(at_ms=...)``) while the source topic is created, altered
and grown on it. The archived records come from the broker-faithful writer (as in
test_replay_real.py), catalogued in the same catalog that holds the history.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    ResourceType,
)
from kafka_archive.services.metadata_history import MetadataHistoryService
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.cli_json import cli

from tests.support.real_kafka import unique_name
from tests.support.replay_data import archived_source_topic

CLUSTER = "cfg-east"
HOUR = 3_600_000

#: the source topic's overrides when the replayed data began (the first snapshot)
AT_START = {
    "retention.ms": str(30 * 24 * HOUR),
    "max.message.bytes": "2000000",
    "min.insync.replicas": "2",
    "cleanup.policy": "delete",
    "segment.ms": str(2 * HOUR),
    # names the source's replicas: never copied, and the report says so
    "leader.replication.throttled.replicas": "*",
}
#: ... and after it (the second snapshot): a replay from the start must not take these
LATER = {"retention.ms": str(HOUR), "max.message.bytes": "500000"}


@dataclass
class Source:
    topic: str
    records: int
    store_uri: str
    db_url: str


def _overrides(cluster: LocalKafkaCluster, topic: str) -> dict[str, str]:
    """The topic's dynamic overrides, as ``kafka-configs --describe`` lists them."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    res = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([res])[res].result(30)
    return {
        n: e.value
        for n, e in entries.items()
        if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and e.value is not None
    }


def _alter(cluster: LocalKafkaCluster, topic: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    res = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(n, v, incremental_operation=AlterConfigOpType.SET)
            for n, v in configs.items()
        ],
    )
    admin.incremental_alter_configs([res])[res].result(30)


@pytest.fixture(scope="module")
def src(
    tmp_path_factory: pytest.TempPathFactory, kafka_cluster: LocalKafkaCluster
) -> Iterator[Source]:
    root = tmp_path_factory.mktemp("replay-configs")
    topic = unique_name("cfg-orders")
    start_ms = int(time.time() * 1000) - HOUR  # recent: the target keeps what it receives
    archived = archived_source_topic(
        root, cluster=CLUSTER, topic=topic, seed=7, cluster_id="cfg-src-id", start_ms=start_ms
    )
    parts, store, catalog = archived.parts, archived.store, archived.catalog
    # the source topic's life on a real cluster, snapshotted at recorded times
    history = MetadataHistoryService(catalog=catalog)
    client = {"bootstrap.servers": kafka_cluster.bootstrap_servers}
    kafka_cluster.create_topic(topic, 3, config=AT_START)
    history.snapshot_from_admin(CLUSTER, client, at_ms=start_ms - HOUR)
    _alter(kafka_cluster, topic, LATER)
    admin = AdminClient(client)
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(30)
    while len(admin.list_topics(topic, timeout=30).topics[topic].partitions) < 5:
        time.sleep(0.1)  # until the brokers have learned the new partitions
    history.snapshot_from_admin(CLUSTER, client, at_ms=start_ms + 2 * HOUR)
    records = sum(len(sp.expected) for sp in parts.values())
    yield Source(topic, records, store.uri, archived.db_url)
    catalog.close()


def _args(src: Source, cluster: LocalKafkaCluster, target: str, *extra: str) -> list[str]:
    return [
        "replay", "run", "--cluster", CLUSTER, "--topic", src.topic, "--from", "earliest",
        "--target", cluster.bootstrap_servers, "--target-topic", target,
        "--store", src.store_uri, "--db", src.db_url, "--json", *extra,
    ]  # fmt: skip


def _sent(cluster: LocalKafkaCluster, topic: str, partitions: int) -> int:
    got = read_to_end(cluster.bootstrap_servers, topic, list(range(partitions)), timeout_s=60)
    return sum(len(v) for v in got.values())


def test_create_topic_as_the_source_was_at_the_start(
    src: Source, kafka_cluster: LocalKafkaCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The created topic has the source's partition count and overrides of the first snapshot
    (not the later ones), the --topic-config override on top, and the throttle left out."""
    monkeypatch.setenv("COLUMNS", "250")  # table rows on one line each
    target = unique_name("cfg-restored")
    extra = ("--create-topic", "--topic-config", "segment.ms=600000")
    code, out, text = cli(*_args(src, kafka_cluster, target, *extra, "--dry-run"))
    assert code == 0, text
    view = out[-1]["topic_config"]
    assert view["settings"]["found"] and view["settings"]["source_partitions"] == 3
    assert view["settings"]["history_source"] == "admin_snapshot"
    sources = {c["name"]: (c["value"], c["source"]) for c in view["settings"]["configs"]}
    assert sources["retention.ms"] == (AT_START["retention.ms"], "source at T")
    assert sources["segment.ms"] == ("600000", "override")
    assert [d["name"] for d in view["dropped"]] == ["leader.replication.throttled.replicas"]
    assert view["created_with"]["max.message.bytes"] == "2000000"
    assert out[-1]["target_check"]["topic_would_be_created"]
    # the same, as a table for people
    human = [a for a in _args(src, kafka_cluster, target, *extra, "--dry-run") if a != "--json"]
    code, _out, text = cli(*human)
    assert code == 0, text
    rows = {tuple(c.strip() for c in line.split("│")[1:-1]) for line in text.splitlines()}
    assert ("retention.ms", AT_START["retention.ms"], "source at T") in rows, text
    assert ("segment.ms", "600000", "override") in rows, text
    assert "not set: leader.replication.throttled.replicas=*" in text

    code, out, text = cli(*_args(src, kafka_cluster, target, *extra))
    assert code == 0, text
    assert out[-1]["status"] == "complete"
    want = {k: v for k, v in AT_START.items() if k != "leader.replication.throttled.replicas"}
    assert _overrides(kafka_cluster, target) == {**want, "segment.ms": "600000"}
    md = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers}).list_topics(target)
    assert len(md.topics[target].partitions) == 3  # at the start: 3 (5 only later)
    assert _sent(kafka_cluster, target, 3) == out[-1]["records_sent"] == src.records > 0
    assert "leader.replication.throttled.replicas" in " ".join(out[-1]["topic_config"]["warnings"])


def test_no_source_config_copies_only_the_partition_count(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    target = unique_name("cfg-bare")
    code, _out, text = cli(
        *_args(src, kafka_cluster, target, "--create-topic", "--no-source-config",
               "--topic-config", "retention.ms=-1")
    )  # fmt: skip
    assert code == 0, text
    assert _overrides(kafka_cluster, target) == {"retention.ms": "-1"}


def test_an_existing_target_that_changes_the_data_is_warned_about(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    """Smaller max.message.bytes than the source's at T and LogAppendTime: warnings in the dry
    run and in the run's report (and on stderr before it sends anything)."""
    target = kafka_cluster.create_topic(
        unique_name("cfg-existing"),
        3,
        config={"max.message.bytes": "100000", "message.timestamp.type": "LogAppendTime"},
    )
    code, out, text = cli(*_args(src, kafka_cluster, target, "--dry-run"))
    assert code == 0, text
    view = out[-1]["topic_config"]
    findings = {f["name"]: f["level"] for f in view["findings"]}
    assert findings == {"max.message.bytes": "warning", "message.timestamp.type": "warning"}
    diffs = {d["name"]: (d["source"], d["target"]) for d in view["diffs"]}
    assert diffs["max.message.bytes"] == ("2000000", "100000")
    assert diffs["retention.ms"] == (AT_START["retention.ms"], None)
    human = [a for a in _args(src, kafka_cluster, target) if a != "--json"]
    code, _out, text = cli(*human)
    assert code == 0, text
    assert "warning: target topic config: message.timestamp.type" in text


def test_an_existing_target_that_would_reject_the_data_is_refused(
    src: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    """message.timestamp.before.max.ms of 10 minutes refuses hour-old CreateTime records: the
    replay stops before sending, with what to do; nothing lands."""
    target = kafka_cluster.create_topic(
        unique_name("cfg-bounded"), 3, config={"message.timestamp.before.max.ms": "600000"}
    )
    code, out, text = cli(*_args(src, kafka_cluster, target))
    assert code == 1, text
    assert out[-1]["error"] == "TargetConfigError"
    assert "message.timestamp.before.max.ms" in out[-1]["message"]
    assert "--no-preserve-timestamps" in out[-1]["hint"]
    assert _sent(kafka_cluster, target, 3) == 0
    # the way out the hint names: the producer stamps the records
    code, out, text = cli(*_args(src, kafka_cluster, target, "--no-preserve-timestamps"))
    assert code == 0 and out[-1]["status"] == "complete", text


# -- a history from the metadata log: configs an older Kafka wrote, a newer target refuses --

WEST = "cfg-west"


@pytest.fixture(scope="module")
def west(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Source]:
    """The same kind of archive for cluster ``cfg-west``, whose history is its metadata log as
    the decoder gives it (hand-built entries in Kafka's JSON forms, applied by the history
    service): topic with 4 partitions at the start (the archive holds 3 of them), overrides
    of which ``message.format.version`` is gone from Kafka 4 (the target refuses it) and
    ``confluent.placement.constraints`` belongs to Confluent Server."""
    from support.metadata_entries import entry, uuid

    root = tmp_path_factory.mktemp("replay-configs-west")
    topic = unique_name("west-orders")
    start_ms = int(time.time() * 1000) - HOUR
    archived = archived_source_topic(
        root, cluster=WEST, topic=topic, seed=8, cluster_id="west-id", start_ms=start_ms
    )
    tid = uuid(4242)
    at = start_ms - HOUR
    configs = {
        "retention.ms": str(10 * 24 * HOUR),
        "message.format.version": "2.8-IV1",
        "confluent.placement.constraints": '{"version":1}',
    }
    entries = [
        entry(i + 1, "CONFIG_RECORD", {"resourceType": 2, "resourceName": topic, "name": n,
                                       "value": v}, ts=at)
        for i, (n, v) in enumerate(configs.items())
    ] + [entry(10, "TOPIC_RECORD", {"name": topic, "topicId": tid}, ts=at)] + [
        entry(11 + p, "PARTITION_RECORD", {
            "partitionId": p, "topicId": tid, "replicas": [1], "isr": [1], "removingReplicas": [],
            "addingReplicas": [], "leader": 1, "leaderRecoveryState": 0, "leaderEpoch": 0,
            "partitionEpoch": 0}, ts=at)
        for p in range(4)
    ]  # fmt: skip
    report = MetadataHistoryService(catalog=archived.catalog).build(WEST, entries)
    assert report.unknown == 0
    records = sum(len(sp.expected) for sp in archived.parts.values())
    yield Source(topic, records, archived.store.uri, archived.db_url)
    archived.catalog.close()


def test_configs_the_target_refuses_are_left_out_and_named(
    west: Source, kafka_cluster: LocalKafkaCluster
) -> None:
    target = unique_name("west-restored")
    args = [
        a if a != CLUSTER else WEST for a in _args(west, kafka_cluster, target, "--create-topic")
    ]
    code, out, text = cli(*args)
    assert code == 0, text
    view = out[-1]["topic_config"]
    assert view["settings"]["history_source"] == "metadata_log"
    assert view["settings"]["topic_id"] == "AAAAAAAAAAAAAAAAAAAQkg"
    dropped = {d["name"]: d["reason"] for d in view["dropped"]}
    assert set(dropped) == {"message.format.version", "confluent.placement.constraints"}
    assert dropped["message.format.version"].startswith("the target refuses it: ")
    assert _overrides(kafka_cluster, target) == {"retention.ms": str(10 * 24 * HOUR)}
    md = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers}).list_topics(target)
    assert len(md.topics[target].partitions) == 4  # the source's at the start, not the archive's
    assert _sent(kafka_cluster, target, 4) == west.records
