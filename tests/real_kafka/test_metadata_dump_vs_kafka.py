"""KRaft's ``__cluster_metadata`` log, written by a real cluster, read by us as Kafka reads it
(issue 12, points 1-2).

A dedicated one-node cluster per version (Kafka 4.4 and 3.9) runs with the StandardAuthorizer
(so ACL records exist) and a metadata log that rolls every 2 s and snapshots every 2 s (so there
are rolled segments and ``.checkpoint`` files). A workload writes a rich history: topics created
with configs, configs altered and deleted, partitions added, a topic deleted and re-created,
ACLs added and removed, a SCRAM user upserted and deleted, client quotas (ints and fractions),
a dynamic broker config. Then:

* ``segments dump --cluster-metadata-decoder`` equals ``kafka-dump-log --cluster-metadata-decoder``
  on every ``__cluster_metadata`` ``.log`` and ``.checkpoint`` the node wrote: batch headers, and
  per record the payload JSON text byte for byte (SCRAM ``salt``/``storedKey``/``serverKey``
  excepted: we print them ``[redacted]``, every other field of those records is compared), and
  the KRaft control records' JSON (3.9 prints only ``controlType: LEADER_CHANGE(2)`` for a
  LeaderChange: the type is compared);
* the decoder over the fixtures' metadata files equals kafka-dump-log 4.4 too (the 18 records
  Kafka cannot decode either are the ones we report UNKNOWN);
* the archive of the metadata log read back (``iter_archived_metadata``) equals the node's own
  files decoded.

Not covered here: delegation tokens (they need a SASL listener) and feature-level upgrades
(the bootstrap FEATURE_LEVEL_RECORDs are compared).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
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
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafka_archive_dev.local_kafka import KafkaUnavailableError, LocalKafkaCluster
from support.real_kafka import _require, unique_name

from segment_lib.cluster_metadata import kafka_json
from segment_lib.cluster_metadata.dump_view import CONTROL_LABELS, REDACTED
from tests.real_kafka.test_dump_vs_kafka import (
    Comparison,
    compare_batch,
    parse_kafka_dump,
    run_kafka_dump,
    run_our_dump,
)

#: a metadata log that rolls and snapshots within seconds (defaults: 7 days / 1 hour / 20 MB)
FAST_METADATA_LOG = {
    "metadata.log.segment.ms": "2000",
    "metadata.log.max.snapshot.interval.ms": "2000",
    "metadata.max.idle.interval.ms": "200",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}
SECRET_FIELDS = ("salt", "storedKey", "serverKey")


def metadata_dir(cluster: LocalKafkaCluster) -> Path:
    (log_dir,) = cluster.log_dirs.values()
    return log_dir / "__cluster_metadata-0"


@pytest.fixture(scope="module", params=["4.4.0", "3.9.1"])
def metadata_cluster(request: pytest.FixtureRequest) -> Iterator[LocalKafkaCluster]:
    _require()
    with tempfile.TemporaryDirectory(prefix="kafka-archive-meta-") as tmp:
        cluster = LocalKafkaCluster(
            Path(tmp), brokers=1, version=request.param, broker_config=FAST_METADATA_LOG
        )
        try:
            cluster.start()
        except KafkaUnavailableError as exc:
            cluster.stop()
            pytest.fail(f"the metadata cluster did not start: {exc}")
        try:
            write_history(cluster)
            wait_for_rolls_and_snapshots(cluster)
            yield cluster
        finally:
            cluster.stop()


def _done(futures: dict[Any, Any]) -> None:
    for f in futures.values():
        f.result(timeout=60)


def _config_tool(cluster: LocalKafkaCluster, *args: str) -> None:
    main = (
        "org.apache.kafka.tools.ConfigCommand"
        if cluster.version.startswith("4")
        else "kafka.admin.ConfigCommand"
    )
    cluster.run_tool(main, ["--bootstrap-server", cluster.bootstrap_servers, *args], timeout=120)


def write_history(cluster: LocalKafkaCluster) -> None:
    """Topics, configs, partitions, delete + re-create, ACLs, SCRAM, quotas, broker config."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    a, b = unique_name("meta-a"), unique_name("meta-b")
    _done(
        admin.create_topics(
            [
                NewTopic(a, 2, 1, config={"retention.ms": "3600000", "cleanup.policy": "delete"}),
                NewTopic(b, 1, 1),
            ]
        )
    )
    time.sleep(1)
    _done(
        admin.incremental_alter_configs(
            [
                ConfigResource(
                    ResourceType.TOPIC,
                    a,
                    incremental_configs=[
                        ConfigEntry(
                            "max.message.bytes", "2048", incremental_operation=AlterConfigOpType.SET
                        ),
                        ConfigEntry(
                            "retention.ms", None, incremental_operation=AlterConfigOpType.DELETE
                        ),
                    ],
                )
            ]
        )
    )
    _done(admin.create_partitions([NewPartitions(a, 4)]))
    _done(admin.delete_topics([b]))
    time.sleep(2)  # a roll between the deletion and the re-creation
    _done(admin.create_topics([NewTopic(b, 3, 1, config={"cleanup.policy": "compact"})]))
    acl = AclBinding(
        ResourceType.TOPIC,
        a,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    group_acl: tuple[Any, ...] = (
        ResourceType.GROUP,
        "g-",
        ResourcePatternType.PREFIXED,
        "User:bob",
        "*",
        AclOperation.ALL,
        AclPermissionType.DENY,
    )
    _done(admin.create_acls([acl, AclBinding(*group_acl)]))
    time.sleep(1)
    _done(admin.delete_acls([AclBindingFilter(*group_acl)]))
    _done(
        admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    "alice", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"secret-pw"
                ),
                UserScramCredentialUpsertion(
                    "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"pw-2"
                ),
            ]
        )
    )
    _done(
        admin.alter_user_scram_credentials(
            [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)]
        )
    )
    _config_tool(
        cluster,
        "--alter",
        "--entity-type",
        "clients",
        "--entity-name",
        "c1",
        "--add-config",
        "producer_byte_rate=1024,request_percentage=12.5",
    )
    _config_tool(
        cluster,
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "consumer_byte_rate=20000000",
    )
    _config_tool(
        cluster,
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-default",
        "--add-config",
        "log.cleaner.threads=2",
    )


def wait_for_rolls_and_snapshots(cluster: LocalKafkaCluster, timeout_s: float = 90.0) -> None:
    """Until the metadata log has a rolled segment and a snapshot past the workload."""
    d = metadata_dir(cluster)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        logs = sorted(d.glob("*.log"))
        snaps = sorted(d.glob("*.checkpoint"))
        if len(logs) >= 3 and len(snaps) >= 2:
            return
        time.sleep(1)
    raise AssertionError(f"no metadata rolls/snapshots in {timeout_s}s: {sorted(os.listdir(d))}")


def copy_metadata_files(cluster: LocalKafkaCluster, dest: Path) -> list[Path]:
    """A stable copy of every metadata ``.log`` and ``.checkpoint`` (both tools read the same
    bytes); the folder name is kept so the decoder applies by itself."""
    target = dest / "__cluster_metadata-0"
    target.mkdir(parents=True)
    out = []
    for f in sorted(metadata_dir(cluster).iterdir()):
        if f.suffix == ".log" or f.name.endswith(".checkpoint"):
            try:
                shutil.copyfile(f, target / f.name)
            except FileNotFoundError:
                continue  # a snapshot or segment cleaned meanwhile
            out.append(target / f.name)
    return out


# -- the comparison ------------------------------------------------------------------------------


def _without_secrets(payload: dict[str, Any]) -> dict[str, Any]:
    data = {k: v for k, v in payload["data"].items() if k not in SECRET_FIELDS}
    return {**payload, "data": data}


def compare_metadata_record(c: Comparison, where: str, ours: dict[str, Any], rest: str) -> None:
    """Our decoded record against DumpLogSegments' `` payload: <json>`` text."""
    assert rest.startswith(" payload: "), (where, rest)
    kafka_text = rest[len(" payload: ") :].rstrip("\n")
    if "metadata_error" in ours:
        c.eq(where, "payload", "undecodable", "undecodable" if "Error at" in kafka_text else "")
        return
    mine = ours["metadata"]
    if mine["type"] == "USER_SCRAM_CREDENTIAL_RECORD":
        theirs = json.loads(kafka_text)
        for name in SECRET_FIELDS:
            c.eq(where, f"{name} redacted", mine["data"].get(name), REDACTED)
            c.eq(where, f"{name} printed by Kafka", name in theirs["data"], True)
        c.eq(
            where,
            "payload",
            kafka_json(_without_secrets(mine)),
            kafka_json(_without_secrets(theirs)),
        )
        return
    c.eq(where, "payload", kafka_json(mine), kafka_text)


def compare_control_record(c: Comparison, where: str, ours: dict[str, Any], rest: str) -> None:
    control = ours["control"]
    rest = rest.rstrip("\n")
    if rest.startswith(" controlType: "):  # 3.x: no JSON for a LeaderChange
        c.eq(where, "control", f" controlType: {control['type']}({control['raw_type']})", rest)
        return
    label = CONTROL_LABELS[control["type"]]
    c.eq(where, "control", f" {label} {kafka_json(control['data'])}", rest)


def compare_metadata_files(cluster: LocalKafkaCluster, files: list[Path]) -> Comparison:
    text = run_kafka_dump(cluster, files, "--cluster-metadata-decoder")
    snapshot_lines = [
        line
        for line in text.split("\n")
        if line.startswith(("Snapshot end offset: ", "KRaft bootstrap snapshot"))
    ]
    text = "\n".join(
        line
        for line in text.split("\n")
        if not line.startswith(("Snapshot end offset: ", "KRaft bootstrap snapshot"))
    )
    kafka_files, _problems = parse_kafka_dump(text)
    ours = run_our_dump(files, "--cluster-metadata-decoder")
    c = Comparison()
    expected_snapshot_lines = []
    for path in files:
        events = ours[str(path)]
        k = kafka_files[str(path)]
        c.files += 1
        snapshot = events[0].get("snapshot")
        if snapshot is not None:
            expected_snapshot_lines.append(
                "KRaft bootstrap snapshot"
                if snapshot.get("bootstrap")
                else f"Snapshot end offset: {snapshot['end_offset']}, epoch: {snapshot['epoch']}"
            )
        batches = [e for e in events if e["kind"] == "batch"]
        records = [e for e in events if e["kind"] == "record"]
        c.eq(str(path), "batch count", len(batches), len(k.batches))
        c.eq(str(path), "record count", len(records), len(k.records))
        for i, (ob, kb) in enumerate(zip(batches, k.batches, strict=False)):
            compare_batch(c, f"{path} batch {i}", ob, kb)
        for ours_rec, krec in zip(records, k.records, strict=False):
            where = f"{path} offset {ours_rec['offset']}"
            c.eq(where, "offset", ours_rec["offset"], krec["offset"])
            c.eq(where, "timestamp", ours_rec["timestamp"], krec["ts"])
            if "control" in ours_rec:
                c.control_records += 1
                compare_control_record(c, where, ours_rec, krec["rest"])
            else:
                compare_metadata_record(c, where, ours_rec, krec["rest"])
            c.records += 1
    c.eq("all files", "snapshot lines", expected_snapshot_lines, snapshot_lines)
    return c


def test_dump_equals_kafka_dump_log_on_every_metadata_file(
    metadata_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    files = copy_metadata_files(metadata_cluster, tmp_path)
    logs = [f for f in files if f.suffix == ".log"]
    snaps = [f for f in files if f.name.endswith(".checkpoint")]
    assert len(logs) >= 2 and snaps, files
    c = compare_metadata_files(metadata_cluster, files)
    print(metadata_cluster.version, c.summary())
    assert not c.mismatches, "\n".join(c.mismatches[:40])
    # the workload's record types are all there, decoded (not just counted)
    types = set()
    for events in run_our_dump(files, "--cluster-metadata-decoder").values():
        types |= {e["metadata"]["type"] for e in events if "metadata" in e}
    assert {
        "TOPIC_RECORD",
        "PARTITION_RECORD",
        "CONFIG_RECORD",
        "REMOVE_TOPIC_RECORD",
        "ACCESS_CONTROL_ENTRY_RECORD",
        "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
        "USER_SCRAM_CREDENTIAL_RECORD",
        "REMOVE_USER_SCRAM_CREDENTIAL_RECORD",
        "CLIENT_QUOTA_RECORD",
        "FEATURE_LEVEL_RECORD",
        "REGISTER_BROKER_RECORD",
    } <= types, types


def test_decoder_equals_kafka_dump_log_on_the_fixture_metadata_files(
    real_broker_data: Path, tmp_path: Path
) -> None:
    """Kafka 4.4's tool (no cluster needed, only its jars) on every fixture metadata file."""
    from tests.test_cluster_metadata_fixtures import metadata_files

    _require()
    tools = LocalKafkaCluster(tmp_path, brokers=1, version="4.4.0")
    files = metadata_files(real_broker_data)
    c = compare_metadata_files(tools, files)
    print(c.summary())
    assert c.records > 17_000
    assert not c.mismatches, "\n".join(c.mismatches[:40])


def test_archived_metadata_log_reads_back_as_the_node_wrote_it(
    metadata_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    from kafka_archive.archive.metadata_log import iter_archived_metadata, metadata_coverage
    from kafka_archive.archive.metadata_snapshots import (
        parse_snapshot_manifest,
        snapshot_manifest_prefix,
    )
    from kafka_archive.archive.runner import run_archive
    from kafka_archive.store import LocalStore

    from segment_lib.cluster_metadata import iter_metadata_file

    store = LocalStore(tmp_path / "store", fsync=False)
    (log_dir,) = metadata_cluster.log_dirs.values()
    report = run_archive(cluster="real", broker_id=1, log_dirs=[str(log_dir)], store=store)
    assert not report.failures and not report.log_dir_failures, report.model_dump_json()
    plan = metadata_coverage(store, "real")
    assert plan.snapshot is None and not plan.gaps  # the node still holds its log from 0
    assert len(plan.segments) >= 2
    bound = plan.segments[-1].end_offset
    copies = copy_metadata_files(metadata_cluster, tmp_path / "copy")
    expected = [
        e
        for f in copies
        if f.suffix == ".log"
        for e in iter_metadata_file(f, allow_torn_tail=True)
        if e.offset < bound
    ]
    archived = list(iter_archived_metadata(store, "real"))
    assert [e.offset for e in archived] == list(range(bound))
    assert archived == expected
    # every archived snapshot holds the bytes of the node's file of that name
    manifests = [
        parse_snapshot_manifest(store.get_bytes(o.key))
        for o in store.list(snapshot_manifest_prefix("real"))
    ]
    assert manifests
    by_name = {f.name: f for f in copies}
    for m in manifests:
        local = by_name.get(f"{m.end_offset:020d}-{m.epoch:010d}.checkpoint")
        if local is not None:  # (a snapshot Kafka cleaned since is not compared)
            assert store.get_bytes(m.key) == local.read_bytes()


def test_dump_equals_kafka_dump_log_on_the_shared_three_node_cluster(
    kafka_cluster: LocalKafkaCluster, tmp_path: Path
) -> None:
    """The session's 3-node 4.4 cluster (three voters, default metadata settings: the active
    segment only, unless it ran long enough to snapshot): every node's metadata files."""
    files: list[Path] = []
    for node_id, log_dir in kafka_cluster.log_dirs.items():
        target = tmp_path / f"node-{node_id}" / "__cluster_metadata-0"
        target.mkdir(parents=True)
        for f in sorted((log_dir / "__cluster_metadata-0").iterdir()):
            if f.suffix == ".log" or f.name.endswith(".checkpoint"):
                shutil.copyfile(f, target / f.name)
                files.append(target / f.name)
    assert len(files) >= 3
    c = compare_metadata_files(kafka_cluster, files)
    print(c.summary())
    assert c.control_records >= 3  # a LeaderChange per node at least
    assert not c.mismatches, "\n".join(c.mismatches[:40])
