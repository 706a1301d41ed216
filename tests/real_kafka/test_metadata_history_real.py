"""The metadata history of a real cluster, through the real archive path (issue 12, point 6).

A one-node KRaft cluster (Kafka 4.4, the StandardAuthorizer, a metadata log that rolls and
snapshots every 2 s: the setup of test_metadata_dump_vs_kafka) goes through a history of
recorded steps: topics created with configs, an override set and another deleted, a
cluster-wide dynamic default (broker ``""``), partitions added, ACLs created and deleted, a
topic deleted and re-created (a new topic id) and altered again. After each step what the
cluster says (``describe_topics``, ``describe_configs``, ``describe_acls``) is recorded with the
wall time (the "moment"; steps are 1.1 s apart so moments differ at ms resolution).

Then the node's log dir is archived by ``kafka-archive archive`` into a local store and
``kafka-archive catalog build`` builds the catalog (and the history) into SQLite; at every
moment the answers of ``catalog topic-config --at``, ``catalog acls --at`` (``--json``) equal
what the cluster said then, ``catalog topic-history`` names every change, and between the
deletion and the re-creation the answer is "no topic", with both incarnations named.

Second case, the log's start gone: the oldest archived metadata segments are removed from a
copy of the store, so the history starts from an archived snapshot; answers at moments after
the snapshot are still right, and before it they say the history is unknown (not "no topic").

Resolved config values are compared where the cluster's value does not come from the brokers'
static ``server.properties`` (the metadata log cannot see those; docs/metadata-history.md).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from kafka_archive.archive.discovery import METADATA_TOPIC
from kafka_archive.archive.manifest import iter_manifest_keys, read_manifest
from kafka_archive.archive.metadata_log import metadata_coverage
from kafka_archive.archive.metadata_snapshots import (
    parse_snapshot_manifest,
    snapshot_manifest_prefix,
)
from kafka_archive.store import LocalStore
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from support.admin_moments import done, settled_topic
from support.cli_json import cli
from support.real_kafka import running_cluster, unique_name

from tests.real_kafka.test_metadata_dump_vs_kafka import (
    FAST_METADATA_LOG,
    _config_tool,
    metadata_dir,
)

pytest_plugins = ["support.postgres"]

CLUSTER = "mh-real"
ANY_ACL = AclBindingFilter(
    ResourceType.ANY,
    None,
    ResourcePatternType.ANY,
    None,
    None,
    AclOperation.ANY,
    AclPermissionType.ANY,
)


@dataclass
class Moment:
    """What the cluster said after one step, and when."""

    step: str
    at_ms: int
    topics: dict[str, dict[str, Any] | None]
    acls: set[tuple[str, ...]]


@dataclass
class History:
    cluster: LocalKafkaCluster
    topics: list[str]
    moments: list[Moment] = field(default_factory=list)
    last_base: int = 0  # base offset of the active metadata segment after the last step


# -- what the cluster says ----------------------------------------------------------------------


def describe_acls(admin: AdminClient) -> set[tuple[str, ...]]:
    bindings = admin.describe_acls(ANY_ACL).result(timeout=30)
    return {
        (
            b.restype.name,
            b.name,
            b.resource_pattern_type.name,
            b.principal,
            b.host,
            b.operation.name,
            b.permission_type.name,
        )
        for b in bindings
    }


# -- the recorded history -----------------------------------------------------------------------


def _alter(rtype: ResourceType, name: str, *ops: tuple[str, str | None]) -> ConfigResource:
    return ConfigResource(
        rtype,
        name,
        incremental_configs=[
            ConfigEntry(
                n,
                v,
                incremental_operation=AlterConfigOpType.SET
                if v is not None
                else AlterConfigOpType.DELETE,
            )
            for n, v in ops
        ],
    )


def write_recorded_history(cluster: LocalKafkaCluster) -> History:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    a, b = unique_name("mh-a"), unique_name("mh-b")
    h = History(cluster, [a, b])
    expect: dict[str, int | None] = {a: None, b: None}  # partition counts (None: no topic)

    def record(step: str) -> None:
        topics = {t: settled_topic(admin, t, expect.get(t), static=False) for t in (a, b)}
        acls = describe_acls(admin)
        h.moments.append(Moment(step, int(time.time() * 1000), topics, acls))
        time.sleep(1.1)

    record("before anything")
    create_a = NewTopic(a, 2, 1, config={"retention.ms": "3600000", "cleanup.policy": "delete"})
    done(admin.create_topics([create_a, NewTopic(b, 1, 1)]))
    expect.update({a: 2, b: 1})
    record("created a and b")
    done(
        admin.incremental_alter_configs(
            [_alter(ResourceType.TOPIC, a, ("max.message.bytes", "2048"), ("retention.ms", None))]
        )
    )
    record("a: override set and another deleted")
    # (confluent-kafka refuses a BROKER resource named "": Kafka's own tool sets it)
    _config_tool(
        cluster, "--alter", "--entity-type", "brokers", "--entity-default",
        "--add-config", "log.retention.ms=7200000",
    )  # fmt: skip
    record("cluster-wide default log.retention.ms")
    done(admin.create_partitions([NewPartitions(a, 4)]))
    expect[a] = 4
    record("a: partitions added")
    read_a = AclBinding(
        ResourceType.TOPIC,
        a,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    deny_group: tuple[Any, ...] = (
        ResourceType.GROUP,
        "g-",
        ResourcePatternType.PREFIXED,
        "User:bob",
        "*",
        AclOperation.ALL,
        AclPermissionType.DENY,
    )
    done(admin.create_acls([read_a, AclBinding(*deny_group)]))
    record("ACLs created")
    done(admin.delete_topics([b]))
    expect[b] = None
    record("b deleted")
    done(admin.create_topics([NewTopic(b, 3, 1, config={"cleanup.policy": "compact"})]))
    expect[b] = 3
    record("b re-created")
    done(admin.delete_acls([AclBindingFilter(*deny_group)]))
    record("an ACL deleted")
    done(
        admin.incremental_alter_configs(
            [_alter(ResourceType.TOPIC, b, ("min.compaction.lag.ms", "60000"))]
        )
    )
    record("b: override set")
    h.last_base = max(int(f.stem) for f in metadata_dir(cluster).glob("*.log"))
    return h


def wait_until_rolled(h: History, timeout_s: float = 60.0) -> None:
    """Until the segment holding the last step is archivable: rolled, and below the newest
    snapshot's end offset (the archive's bound for the Raft log, which has no checkpoints)."""
    d = metadata_dir(h.cluster)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        later = [int(f.stem) for f in d.glob("*.log") if int(f.stem) > h.last_base]
        snapshot_ends = [int(f.name.split("-")[0]) for f in d.glob("*.checkpoint")]
        if later and snapshot_ends and max(snapshot_ends) >= min(later):
            return
        time.sleep(0.5)
    raise AssertionError(f"the metadata log did not roll in {timeout_s}s")


@pytest.fixture(scope="module")
def history() -> Iterator[History]:
    with running_cluster("4.4.0", 1, FAST_METADATA_LOG) as cluster:
        h = write_recorded_history(cluster)
        wait_until_rolled(h)
        yield h


# -- the catalog's answers ----------------------------------------------------------------------


def archive_and_build(h: History, store_dir: Path, db: str) -> None:
    (log_dir,) = h.cluster.log_dirs.values()
    uri = f"file://{store_dir}"
    code, _out, text = cli(
        "archive", "--cluster", CLUSTER, "--broker-id", "1", "--log-dir", str(log_dir),
        "--store", uri, "--json",
    )  # fmt: skip
    assert code == 0, text
    build(uri, db)


def build(uri: str, db: str) -> dict[str, Any]:
    code, out, text = cli("catalog", "build", "--in-process", "--json", "--store", uri, "--db", db)
    assert code == 0, text
    (report,) = [o for o in out if o.get("kind") == "build"]
    return report  # type: ignore[no-any-return]


def topic_config(db: str, topic: str, at_ms: int) -> tuple[int, dict[str, Any]]:
    code, out, text = cli(
        "catalog", "topic-config", "--cluster", CLUSTER, "--topic", topic,
        "--at", str(at_ms), "--db", db, "--json",
    )  # fmt: skip
    assert len(out) == 1, text
    return code, out[0]


def acls_at(db: str, at_ms: int) -> tuple[int, list[dict[str, Any]]]:
    code, out, _text = cli(
        "catalog", "acls", "--cluster", CLUSTER, "--at", str(at_ms), "--db", db, "--json"
    )
    return code, out


def _acl_key(a: dict[str, Any]) -> tuple[str, ...]:
    return tuple(
        a[k]
        for k in (
            "resource_type",
            "resource_name",
            "pattern_type",
            "principal",
            "host",
            "operation",
            "permission_type",
        )
    )


def check_moment(db: str, m: Moment) -> None:
    """The catalog's answers at ``m`` equal what the cluster said then (on a difference, the
    message carries the topic's history, to see which record is missing or late)."""
    try:
        _check_moment(db, m)
    except AssertionError as exc:
        story = [
            cli("catalog", "topic-history", "--cluster", CLUSTER, "--topic", t, "--db", db)[2]
            for t in m.topics
        ]
        raise AssertionError(f"{exc}\nat {m.at_ms}:\n" + "\n".join(story)) from None


def _check_moment(db: str, m: Moment) -> None:
    for topic, said in m.topics.items():
        code, got = topic_config(db, topic, m.at_ms)
        where = (m.step, topic)
        if said is None:
            assert code == 1 and got["kind"] == "error", (where, got)
            assert f"no topic {topic!r}" in got["message"], (where, got)
            continue
        assert code == 0, (where, got)
        assert got["topic_id"] == said["topic_id"], where
        assert got["partitions"] == said["partitions"], where
        assert {int(k): v for k, v in got["replicas"].items()} == said["replicas"], where
        assert {int(k): v for k, v in got["leaders"].items()} == said["leaders"], where
        assert got["configs"] == said["overrides"], where
        assert got["source"] == "metadata_log" and got["resolution_note"] is None, where
        resolved = {r["name"]: r["value"] for r in got["resolved"]}
        for name, value in said["values"].items():
            assert resolved.get(name) == value, (where, name, resolved.get(name), value)
    code, found = acls_at(db, m.at_ms)
    assert code == 0, (m.step, found)
    assert {_acl_key(a) for a in found} == m.acls, m.step


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_catalog_answers_what_the_cluster_said_at_every_moment(
    history: History, tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    db = (
        str(tmp_path / "catalog.db")
        if backend == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    archive_and_build(history, tmp_path / "store", db)
    moments = history.moments
    a, b = history.topics
    # the history is real: ids differ across the re-creation, ACLs come and go
    ids_b = [m.topics[b]["topic_id"] for m in moments if m.topics[b] is not None]
    assert len(set(ids_b)) == 2
    assert any(m.acls for m in moments) and not moments[0].acls
    for m in moments:
        check_moment(db, m)
    # between the deletion and the re-creation: no topic, and both incarnations are named
    gone = next(m for m in moments if m.step == "b deleted")
    code, err = topic_config(db, b, gone.at_ms)
    assert code == 1
    assert [i["topic_id"] for i in err["incarnations"]] == list(dict.fromkeys(ids_b))
    # what changed when, by which record
    code, events, text = cli(
        "catalog", "topic-history", "--cluster", CLUSTER, "--topic", b, "--db", db, "--json"
    )
    assert code == 0, text
    whats = [(e["topic_id"], e["what"], e["record_type"]) for e in events]
    old, new = dict.fromkeys(ids_b)
    assert (old, "created", "TOPIC_RECORD") in whats, whats
    assert (old, "deleted", "REMOVE_TOPIC_RECORD") in whats, whats
    assert (new, "created", "TOPIC_RECORD") in whats, whats
    assert (new, "config cleanup.policy = compact", "CONFIG_RECORD") in whats, whats
    assert (new, "config min.compaction.lag.ms = 60000", "CONFIG_RECORD") in whats, whats
    times = [e["at_ms"] for e in events]
    assert times == sorted(times)
    code, events, text = cli(
        "catalog", "topic-history", "--cluster", CLUSTER, "--topic", a, "--db", db, "--json"
    )
    whats = [(e["what"], e["record_type"]) for e in events]
    assert ("config max.message.bytes = 2048", "CONFIG_RECORD") in whats, whats
    assert ("partition 3 added", "PARTITION_RECORD") in whats, whats
    assert any(w.startswith("config retention.ms") and "deleted" in w for w, _ in whats), whats
    # a re-build adds nothing and changes no answer
    build(f"file://{tmp_path / 'store'}", db)
    check_moment(db, moments[-1])


def test_a_history_from_a_snapshot_is_right_after_it_and_unknown_before(
    history: History, tmp_path: Path
) -> None:
    store_dir = tmp_path / "store"
    (log_dir,) = history.cluster.log_dirs.values()
    code, _out, text = cli(
        "archive", "--cluster", CLUSTER, "--broker-id", "1", "--log-dir", str(log_dir),
        "--store", f"file://{store_dir}", "--json",
    )  # fmt: skip
    assert code == 0, text
    store = LocalStore(store_dir, fsync=False)
    manifests = {
        k: read_manifest(store, k) for k in iter_manifest_keys(store, CLUSTER, METADATA_TOPIC, 0)
    }
    snapshots = {
        o.key: parse_snapshot_manifest(store.get_bytes(o.key))
        for o in store.list(snapshot_manifest_prefix(CLUSTER))
        if o.key.endswith(".json")
    }
    inside = [m.at_ms for m in history.moments]
    first_end = min(m.end_offset for m in manifests.values())
    # a snapshot taken in the middle of the recorded history, past the first segment
    usable = [
        s
        for s in snapshots.values()
        if s.end_offset > first_end and inside[1] < s.last_contained_log_timestamp < inside[-2]
    ]
    assert usable, (
        sorted((s.end_offset, s.last_contained_log_timestamp) for s in snapshots),
        inside,
    )
    snap = min(usable, key=lambda s: s.end_offset)
    # the log's start is gone: the segments that end at or before the snapshot's end offset;
    # and the snapshot is the newest archived one (the reader starts from the newest)
    for key, m in manifests.items():
        if m.end_offset <= snap.end_offset:
            store.delete(key)
    for key, s in snapshots.items():
        if s.end_offset > snap.end_offset:
            store.delete(key)
    plan = metadata_coverage(store, CLUSTER)
    assert plan.snapshot is not None and plan.snapshot.end_offset == snap.end_offset, plan
    db = str(tmp_path / "catalog.db")
    build(f"file://{store_dir}", db)
    snap_ms = snap.last_contained_log_timestamp
    after = [m for m in history.moments if m.at_ms >= snap_ms]
    before = [m for m in history.moments if m.at_ms < snap_ms]
    assert after and before
    for m in after:
        check_moment(db, m)
    # a topic older than the snapshot is not said to be created at the snapshot's time
    a = history.topics[0]
    code, events, text = cli(
        "catalog", "topic-history", "--cluster", CLUSTER, "--topic", a, "--db", db, "--json"
    )
    assert code == 0, text
    assert (events[0]["what"], events[0]["snapshot_id"]) == (
        "exists when the history begins (created earlier)",
        f"{snap.end_offset}-{snap.epoch}",
    ), events[0]
    for m in before:
        for topic in history.topics:
            code, got = topic_config(db, topic, m.at_ms)
            assert code == 1 and got["kind"] == "error", (m.step, got)
            assert "unknown" in got["message"] and "snapshot" in got["message"], got
        code, found = acls_at(db, m.at_ms)
        assert code == 1 and found[0]["kind"] == "error", (m.step, found)
        assert "unknown" in found[0]["message"], found
    shutil.rmtree(store_dir)
