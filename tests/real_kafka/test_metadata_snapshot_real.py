"""Admin API snapshots of a real cluster into the metadata history (issue 12, point 5), through
the ``kafka_archive_metadata_snapshot`` DAG's task body.

A topic is created with an override, its configs altered, partitions added, the topic deleted
and re-created (a new topic id), with a snapshot after each step; what ``describe_topics`` and
``describe_configs`` returned at each step is recorded. Afterwards the history's answer at every
recorded moment (and just before the next one) equals what the cluster said then: topic id,
partition count, replicas, leaders, dynamic overrides, and the resolved value of every
well-known topic config (override, static broker config or Kafka's default).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from kafka_archive.airflow.metadata_tasks import metadata_snapshot_in_task
from kafka_archive.catalog.db import open_catalog
from kafka_archive.services.metadata_history import MetadataHistoryService, MetadataHistoryUnknown
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.admin_moments import done, settled_topic, topic_said
from support.real_kafka import unique_name

from segment_lib.cluster_metadata import iter_metadata_file

CLUSTER = "snap"


def test_admin_snapshots_answer_what_the_cluster_said(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    db = tmp_path / "catalog.db"
    open_catalog(db, create=True).close()
    admin = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap_servers})
    topic = unique_name("mh-snap")
    env = {
        "KAFKA_ARCHIVE_DB": str(db),
        "KAFKA_ARCHIVE_METADATA_SNAPSHOTS": json.dumps(
            [{"cluster": CLUSTER, "bootstrap": kafka_cluster.bootstrap_servers}]
        ),
    }
    seen: list[tuple[int, dict[str, Any] | None]] = []

    def snapshot(partitions: int | None) -> None:
        before = settled_topic(admin, topic, partitions)
        (report,) = metadata_snapshot_in_task(lambda _name: None, env=env)
        assert topic_said(admin, topic) == before, "the topic changed during the snapshot"
        seen.append((report["at_ms"], before))
        time.sleep(0.01)  # the next snapshot is at a later millisecond

    done(admin.create_topics([NewTopic(topic, 2, 3, config={"retention.ms": "3600000"})]))
    snapshot(2)
    alter = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "2048", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    done(admin.incremental_alter_configs([alter]))
    snapshot(2)
    done(admin.create_partitions([NewPartitions(topic, 4)]))
    snapshot(4)
    done(admin.delete_topics([topic]))
    snapshot(None)
    done(admin.create_topics([NewTopic(topic, 1, 3, config={"cleanup.policy": "compact"})]))
    snapshot(1)

    ids = [s["topic_id"] for _t, s in seen if s is not None]
    assert ids[0] == ids[1] == ids[2] != ids[3], "the re-created topic has a new id"
    with MetadataHistoryService(catalog=open_catalog(db)) as svc:
        for n, (at_ms, said) in enumerate(seen):
            until = seen[n + 1][0] - 1 if n + 1 < len(seen) else at_ms + 3_600_000
            for t in (at_ms, until):
                state = svc.topic_at(CLUSTER, topic, t)
                if said is None:
                    assert state is None, (n, t)
                    continue
                assert state is not None, (n, t)
                assert state.topic_id == said["topic_id"]
                assert state.partitions == said["partitions"]
                assert state.replicas == said["replicas"]
                assert state.leaders == said["leaders"]
                assert state.configs == said["overrides"]
                assert state.source == "admin_snapshot"
                assert state.resolution_note and "snapshot" in state.resolution_note
                resolved = {r.name: r.value for r in svc.resolved_configs(state, t)}
                for name, value in said["values"].items():
                    assert resolved[name] == value, (n, name)
        # before the first snapshot nothing was seen: unknown, not "no topic"
        with pytest.raises(MetadataHistoryUnknown):
            svc.topic_at(CLUSTER, topic, seen[0][0] - 1)
        history = svc.topic_history(CLUSTER, topic)
        whats = [e.what for e in history]
        assert whats.count("created") == 2 and whats.count("deleted") == 1
        assert "config max.message.bytes = 2048" in whats
        assert "partition 3 added" in whats
        acls, note = svc.acls_at(CLUSTER, seen[-1][0])
        assert acls == [] and note is not None

    _check_the_metadata_log_agrees(kafka_cluster, db, topic, seen)


def _check_the_metadata_log_agrees(
    kafka_cluster: LocalKafkaCluster, db: Path, topic: str, seen: list[tuple[int, Any]]
) -> None:
    """The same moments from the cluster's own metadata log (node 1's ``__cluster_metadata``
    files, decoded): the exact history agrees with what the cluster said at each of them."""
    meta = kafka_cluster.log_dirs[1] / "__cluster_metadata-0"
    entries = (
        e
        for seg in sorted(meta.glob("*.log"))
        for e in iter_metadata_file(seg, allow_torn_tail=True)
    )
    with MetadataHistoryService(catalog=open_catalog(db)) as svc:
        report = svc.build("from-log", entries)
        assert report.unknown == 0 and report.gaps == []
        for n, (at_ms, said) in enumerate(seen):
            state = svc.topic_at("from-log", topic, at_ms)
            if said is None:
                assert state is None, n
                continue
            assert state is not None, n
            got = (state.topic_id, state.partitions, state.replicas, state.leaders, state.configs)
            want = (said["topic_id"], said["partitions"], said["replicas"], said["leaders"])
            assert got == (*want, said["overrides"]), n
            assert state.source == "metadata_log" and state.resolution_note is None
        kinds = {e.record_type for e in svc.topic_history("from-log", topic)}
        assert {"TOPIC_RECORD", "PARTITION_RECORD", "CONFIG_RECORD", "REMOVE_TOPIC_RECORD"} <= kinds


@pytest.mark.parametrize("bad", ["not a list", [{"cluster": "x"}]])
def test_a_malformed_setting_is_named(bad: Any, tmp_path: Path) -> None:
    from kafka_archive.settings import SettingsError

    env = {
        "KAFKA_ARCHIVE_DB": str(tmp_path / "c.db"),
        "KAFKA_ARCHIVE_METADATA_SNAPSHOTS": json.dumps(bad),
    }
    with pytest.raises(SettingsError, match="metadata_snapshots"):
        metadata_snapshot_in_task(lambda _name: None, env=env)
