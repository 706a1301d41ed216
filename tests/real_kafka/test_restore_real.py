"""A whole-cluster restore between two REAL Kafka clusters (issue 24, point 6).

The source is a 3-broker Apache Kafka cluster with ACLs enforced (StandardAuthorizer; the
harness's PLAINTEXT listener is a super user) holding 12 topics - compacted, transactional with
commits and aborts, LogAppendTime, gzip, non-default configs, ``_schemas`` - ACLs and six
consumer groups. Everything is written, then a moment T is taken, then more of everything
(records, commits, a config change, an ACL, a topic) so that "as at T" is not "as now". The
archive is made the platform's own way: ``archive fetch --until-caught-up`` (records),
``catalog build``, ``catalog follow-offsets`` (groups) and Admin API snapshots of the metadata
history. What a read_committed consumer of the source sees before T is recorded, and the source
is stopped (one cluster at a time on this machine).

The target is a second real cluster with SASL_SSL and ACLs. On it:

* a principal lacking one permission (WRITE on the transactional ids) is refused by the
  preflight, which names it, and nothing is written;
* the plan without ``--replication-factor`` names the replication-factor problem (RF 3 at T, 1
  broker);
* ``restore run`` (parallelism 1, so it is mid-way for a while) is killed with SIGKILL after
  two topics are complete; ``restore status`` says interrupted; ``restore resume`` finishes it;
* every restored topic read back read_committed equals the source's committed records before T
  (keys, values, headers, timestamps, per partition, in order); partition counts and config
  overrides equal the source's at T; the ACLs of the target equal the source's ACLs at T on
  the selected topics and groups with the principal mapped (the ACL added after T is not
  there); the topic created after T is not; ``_schemas`` was complete before any other topic
  started;
* every group's committed position on the target points at the same record as its commit at T
  on the source (the first record it has not consumed is the same record), and the group that
  also committed on an unselected topic is reported.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    ConfigSource,
    ResourcePatternType,
    ResourceType,
)
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.local_kafka import KafkaUnavailableError, LocalKafkaCluster, SaslSslListener
from kafka_archive_dev.tls import make_tls
from support.cli_json import cli
from support.real_kafka import SECURED_USERS, TEST_BROKER_CONFIG, SecuredCluster

pytestmark = pytest.mark.timeout(900)

CLUSTER = "src"
HOUR = 3_600_000
#: topic -> (partitions, configs); every one non-default somewhere
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "_schemas": (1, {"cleanup.policy": "compact", "min.compaction.lag.ms": str(HOUR)}),
    "orders": (3, {"retention.ms": str(30 * 24 * HOUR), "max.message.bytes": "2000000"}),
    "payments-txn": (3, {}),
    "profiles-compacted": (
        2,
        {"cleanup.policy": "compact", "min.compaction.lag.ms": str(HOUR), "segment.ms": str(HOUR)},
    ),
    "clicks-logappend": (2, {"message.timestamp.type": "LogAppendTime"}),
    "audit-gzip": (1, {"compression.type": "gzip", "retention.bytes": "1073741824"}),
    "t-inventory": (4, {}),
    "t-shipping": (2, {"cleanup.policy": "compact,delete", "min.compaction.lag.ms": str(HOUR)}),
    "t-returns": (1, {"max.message.bytes": "500000"}),
    "metrics": (2, {"segment.bytes": str(16 * 1024 * 1024)}),
    "notifications": (1, {}),
    "skip-me": (1, {}),
}
GROUPS = {
    "billing": ["orders", "payments-txn"],
    "shipping": ["t-shipping", "t-inventory"],
    "analytics": ["clicks-logappend", "metrics"],
    "profiles": ["profiles-compacted"],
    "auditor": ["audit-gzip", "notifications"],
    "mixed": ["orders", "skip-me"],  # also on a topic outside the selection
}
PREFIX = "r."


@dataclass
class World:
    tmp: Path
    store: str
    db: str
    at_ms: int
    #: topic -> partition -> the (key, value, headers, timestamp) of every committed record < T
    expected: dict[str, dict[int, list[tuple[Any, ...]]]]
    #: group -> (topic, partition) -> committed source offset at T
    commits_at_t: dict[str, dict[tuple[str, int], int]]
    #: topic -> partition -> source offsets of the committed records < T
    source_offsets: dict[str, dict[int, list[int]]]
    configs_at_t: dict[str, dict[str, str]]
    acls_at_t: set[tuple[str, str, str, str, str, str]]
    ca_pem: Path = field(default_factory=Path)


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _overrides(admin: AdminClient, topic: str) -> dict[str, str]:
    res = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([res])[res].result(30)
    return {
        n: e.value
        for n, e in entries.items()
        if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value and e.value is not None
    }


def _acls(admin: AdminClient) -> set[tuple[str, str, str, str, str, str]]:
    anything: Any = None  # the stubs say str; None is "any"
    f = AclBindingFilter(
        ResourceType.ANY,
        anything,
        ResourcePatternType.ANY,
        anything,
        anything,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    return {
        (
            b.restype.name,
            b.name,
            b.resource_pattern_type.name,
            b.principal,
            b.operation.name,
            b.permission_type.name,
        )
        for b in admin.describe_acls(f).result(30)
    }


def _grant(admin: AdminClient, principal: str, acls: list[tuple[str, str, str, str]]) -> None:
    bindings = [
        AclBinding(
            ResourceType[t],
            n,
            ResourcePatternType[p],
            principal,
            "*",
            AclOperation[o],
            AclPermissionType.ALLOW,
        )
        for t, n, p, o in acls
    ]
    for fut in admin.create_acls(bindings).values():
        fut.result(30)


def _produce(bootstrap: str, topic: str, partitions: int, n: int, tag: str) -> None:
    failed: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failed.append(str(err))

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "enable.idempotence": True,
            "on_delivery": delivered,
        }
    )
    for i in range(n):
        part = i % partitions
        # a compacted topic refuses records without a key
        key = (
            f"k{i % 17}".encode()
            if "compact" in TOPICS.get(topic, (0, {}))[1].get("cleanup.policy", "")
            else None
        )
        p.produce(
            topic,
            value=f"{tag}-{topic}-{i}".encode(),
            key=key,
            partition=part,
            headers=[("h", f"{i}".encode())] if i % 3 == 0 else None,
        )
    assert p.flush(60) == 0 and not failed, (topic, failed[:3])


def _transactions(bootstrap: str, topic: str, tag: str, rounds: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"app-{tag}"})
    p.init_transactions(30)
    for r in range(rounds):
        p.begin_transaction()
        for i in range(9):
            p.produce(topic, value=f"{tag}-txn-{r}-{i}".encode(), partition=i % 3)
        if r % 3 == 2:
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in offsets.items()], asynchronous=False)
    c.close()


def _ends(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends"})
    out = {
        p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
        for p in range(partitions)
    }
    c.close()
    return out


def _offsets_at(bootstrap: str, topic: str, partitions: int, at_ms: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "times"})
    found = c.offsets_for_times([TopicPartition(topic, p, at_ms) for p in range(partitions)], 30)
    ends = _ends(bootstrap, topic, partitions)
    c.close()
    return {tp.partition: ends[tp.partition] if tp.offset < 0 else tp.offset for tp in found}


def _cli_ok(*args: str) -> dict[str, Any]:
    code, lines, out = cli(*args, "--json")
    assert code == 0, out
    last: dict[str, Any] = lines[-1]
    return last


def _source_phase(tmp: Path, tls: Any) -> World:
    store, db = str(tmp / "store"), str(tmp / "catalog.db")
    src = LocalKafkaCluster(
        tmp / "source",
        brokers=3,
        broker_config=TEST_BROKER_CONFIG,
        sasl_ssl=SaslSslListener(tls.keystore, tls.keystore_password, SECURED_USERS),
    )
    try:
        src.start()
    except KafkaUnavailableError as exc:
        src.stop()
        pytest.fail(f"the source cluster did not start: {exc}")
    try:
        return _fill_and_archive(src, store, db, tmp)
    finally:
        src.stop()


def _fill_and_archive(src: LocalKafkaCluster, store: str, db: str, tmp: Path) -> World:
    from kafka_archive.services.metadata_history import MetadataHistoryService

    boot = src.bootstrap_servers
    admin = _admin(boot)
    for name, (parts, cfg) in TOPICS.items():
        src.create_topic(name, parts, config=cfg)
    _grant(
        admin,
        "User:app",
        [
            ("TOPIC", "orders", "LITERAL", "WRITE"),
            ("TOPIC", "t-", "PREFIXED", "READ"),
            ("GROUP", "billing", "LITERAL", "READ"),
            ("TRANSACTIONAL_ID", "app-", "PREFIXED", "WRITE"),
            ("TOPIC", "skip-me", "LITERAL", "READ"),
        ],
    )
    for name, (parts, _cfg) in TOPICS.items():
        if name != "payments-txn":
            _produce(boot, name, parts, 120 + 10 * parts, "before")
    _transactions(boot, "payments-txn", "before", 9)
    commits_at_t: dict[str, dict[tuple[str, int], int]] = {}
    for g, topics in GROUPS.items():
        offsets = {}
        for t in topics:
            ends = _ends(boot, t, TOPICS[t][0])
            for p, end in ends.items():
                offsets[(t, p)] = max(0, end - 7 - p)  # somewhere inside, not at the end
        _commit(boot, g, offsets)
        commits_at_t[g] = offsets
    time.sleep(1.0)
    history = MetadataHistoryService.from_settings(_settings(store, db))
    at_ms = int(time.time() * 1000)
    history.snapshot_from_admin(CLUSTER, {"bootstrap.servers": boot}, at_ms=at_ms)
    configs_at_t = {t: _overrides(admin, t) for t in TOPICS}
    acls_at_t = _acls(admin)
    time.sleep(1.0)
    # after T: more of everything, none of which a restore at T may show
    for name, (parts, _cfg) in TOPICS.items():
        if name != "payments-txn":
            _produce(boot, name, parts, 40, "after")
    _transactions(boot, "payments-txn", "after", 3)
    for g, offsets in commits_at_t.items():
        _commit(boot, g, {k: v + 3 for k, v in offsets.items()})
    src.create_topic("late-topic", 1)
    _produce(boot, "late-topic", 1, 10, "after")
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AlterConfigOpType,
        ConfigEntry,
    )

    res = ConfigResource(
        ResourceType.TOPIC,
        "orders",
        incremental_configs=[
            ConfigEntry("retention.ms", str(HOUR), incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([res])[res].result(30)
    _grant(admin, "User:late", [("TOPIC", "orders", "LITERAL", "READ")])
    history.snapshot_from_admin(CLUSTER, {"bootstrap.servers": boot})
    history.close()
    # what a read_committed consumer of the source sees before T
    expected: dict[str, dict[int, list[tuple[Any, ...]]]] = {}
    source_offsets: dict[str, dict[int, list[int]]] = {}
    for name, (parts, _cfg) in TOPICS.items():
        cut = _offsets_at(boot, name, parts, at_ms)
        got = read_to_end(boot, name, list(range(parts)), timeout_s=120)
        expected[name] = {
            p: [(r.key, r.value, r.headers, r.timestamp) for r in recs if r.offset < cut[p]]
            for p, recs in got.items()
        }
        source_offsets[name] = {
            p: [r.offset for r in recs if r.offset < cut[p]] for p, recs in got.items()
        }
    # the archive, the platform's own way
    _cli_ok(
        "archive",
        "fetch",
        "--cluster",
        CLUSTER,
        "--bootstrap",
        boot,
        "--store",
        store,
        "--until-caught-up",
    )
    _cli_ok("catalog", "build", "--store", store, "--db", db, "--engine", "in-process")
    _cli_ok(
        "catalog",
        "follow-offsets",
        "--cluster",
        CLUSTER,
        "--bootstrap",
        boot,
        "--db",
        db,
        "--until-caught-up",
    )
    return World(
        tmp, store, db, at_ms, expected, commits_at_t, source_offsets, configs_at_t, acls_at_t
    )


def _settings(store: str, db: str) -> Any:
    from kafka_archive.settings import load_settings

    return load_settings({"store": store, "db": db})


@pytest.fixture(scope="module")
def world(
    kafka_available: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[World, SecuredCluster]]:
    tmp = tmp_path_factory.mktemp("restore-real")
    tls = make_tls(tmp / "tls")
    w = _source_phase(tmp, tls)
    with tempfile.TemporaryDirectory(prefix="kafka-archive-restore-target-") as t:
        target = LocalKafkaCluster(
            Path(t),
            brokers=1,
            broker_config=TEST_BROKER_CONFIG,
            sasl_ssl=SaslSslListener(tls.keystore, tls.keystore_password, SECURED_USERS),
        )
        try:
            target.start()
        except KafkaUnavailableError as exc:
            target.stop()
            pytest.fail(f"the target cluster did not start: {exc}")
        try:
            yield w, SecuredCluster(target, tls.ca_pem)
        finally:
            target.stop()


def _target_args(sec: SecuredCluster, user: str) -> list[str]:
    out = ["--target", sec.cluster.sasl_bootstrap_servers]
    for k, v in sec.client_config(user).items():
        if k != "bootstrap.servers":
            out += ["--target-config", f"{k}={v}"]
    return out


def _restore_args(
    w: World, sec: SecuredCluster, user: str, *extra: str, prefix: str = PREFIX
) -> list[str]:
    return [
        "--cluster",
        CLUSTER,
        "--all-topics",
        "--exclude",
        "skip-*",
        "--at",
        str(w.at_ms),
        "--prefix",
        prefix,
        "--acls",
        "--principal-map",
        "User:app=User:app-dr",
        *_target_args(sec, user),
        "--store",
        w.store,
        "--db",
        w.db,
        *extra,
    ]


def test_a_principal_lacking_one_permission_is_refused_naming_it(
    world: tuple[World, SecuredCluster],
) -> None:
    w, sec = world
    sec.allow("replayer", [
        ("BROKER", "kafka-cluster", "LITERAL", "DESCRIBE"),
        ("BROKER", "kafka-cluster", "LITERAL", "CREATE"),
        ("BROKER", "kafka-cluster", "LITERAL", "ALTER"),
        ("TOPIC", PREFIX, "PREFIXED", "ALL"),
        ("TOPIC", "__kafka_archive_replay_progress", "LITERAL", "ALL"),
        ("GROUP", "*", "LITERAL", "READ"),
    ])  # fmt: skip  # everything but WRITE on the transactional ids
    args = _restore_args(w, sec, "replayer", "--replication-factor", "1")
    code, lines, out = cli("restore", "plan", *args, "--json")
    assert code == 1, out
    plan = lines[-1]
    denied = [p for p in plan["problems"] if p["code"] == "permission_denied"]
    assert denied and all("TRANSACTIONAL_ID" in p["message"] for p in denied), plan["problems"]
    assert all("WRITE" in p["message"] and p["hint"] for p in denied)
    assert {p["code"] for p in plan["problems"] if p["level"] == "error"} == {"permission_denied"}
    code, lines, out = cli("restore", "run", *args, "--json")
    assert code == 1 and lines[-1]["kind"] == "error", out
    assert "TRANSACTIONAL_ID" in lines[-1]["message"]
    admin = _admin(sec.cluster.bootstrap_servers)
    assert not [t for t in admin.list_topics(timeout=30).topics if t.startswith(PREFIX)]


def _kafka_archive() -> str:
    return str(Path(sys.executable).parent / "kafka-archive")


def test_killed_mid_restore_then_resumed_restores_the_cluster_as_at_t(
    world: tuple[World, SecuredCluster],
) -> None:
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.replay.bookkeeping.ledger import ReplayLedger

    w, sec = world
    args = _restore_args(w, sec, "admin", "--replication-factor", "1", "--parallelism", "1")
    proc = subprocess.Popen(
        [_kafka_archive(), "restore", "run", *args, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    cat = open_catalog(w.db)
    ledger = ReplayLedger(cat.engine)
    deadline = time.monotonic() + 300
    try:
        others_seen = 0
        while time.monotonic() < deadline:
            runs = ledger.runs(cluster=CLUSTER)
            # _schemas first and alone: no other topic's replay has started before it is
            # complete (their topics are made ahead, recorded "planned": no record sent)
            others = [r for r in runs if r.topic != "_schemas" and r.status != "planned"]
            if others:
                others_seen += 1
                assert [r.status for r in runs if r.topic == "_schemas"] == ["complete"], runs
            if sum(r.status == "complete" for r in runs) >= 2 or proc.poll() is not None:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    status = _cli_ok("restore", "status", "--store", w.store, "--db", w.db)["restores"]
    assert len(status) == 1 and status[0]["status"] == "interrupted", status
    rid = status[0]["restore_id"]
    secrets = ["--target-config", f"sasl.password={SECURED_USERS['admin']}"]
    code, lines, out = cli(
        "restore", "resume", rid, *secrets, "--store", w.store, "--db", w.db, "--json"
    )
    assert code == 0, out
    report = lines[-1]
    assert report["status"] == "complete", report
    _check_target(w, sec, report)
    # (checked while the first run went: _schemas complete before any other replay existed)
    assert others_seen > 0
    cat.close()
    # the same command again: the restore is complete, nothing more is sent
    again = _cli_ok("restore", "run", *args)
    assert again["status"] == "complete" and any("already" in n for n in again["notes"])


def _check_target(w: World, sec: SecuredCluster, report: dict[str, Any]) -> None:
    boot = sec.cluster.bootstrap_servers  # the harness's super-user listener, to read back
    admin = _admin(boot)
    listed = admin.list_topics(timeout=30).topics
    assert PREFIX + "late-topic" not in listed and PREFIX + "skip-me" not in listed
    for name, (parts, _cfg) in TOPICS.items():
        if name == "skip-me":
            continue
        target = PREFIX + name
        assert len(listed[target].partitions) == parts, name
        assert _overrides(admin, target) == w.configs_at_t[name], name
        got = read_to_end(boot, target, list(range(parts)), timeout_s=120)
        view = {
            p: [(r.key, r.value, r.headers, r.timestamp) for r in recs] for p, recs in got.items()
        }
        assert view == w.expected[name], name
    # ACLs: the source's at T on the selected topics and groups, renamed and mapped
    want = set()
    for kind, name, pattern, principal, op, perm in w.acls_at_t:
        if principal != "User:app" or name == "skip-me":
            continue
        want.add(
            (kind, PREFIX + name if kind == "TOPIC" else name, pattern, "User:app-dr", op, perm)
        )
    got_acls = {a for a in _acls(admin) if a[3] not in ("User:replayer",)}
    assert got_acls == want
    # groups: the target position is the same record as the source commit at T
    groups = {g["group"]: g for g in report["groups"]}
    assert set(groups) == set(GROUPS) and all(g["applied"] for g in groups.values()), groups
    assert groups["mixed"]["outside"] == ["skip-me"]
    for g, offsets in w.commits_at_t.items():
        c = Consumer({"bootstrap.servers": boot, "group.id": g})
        tps = [TopicPartition(PREFIX + t, p) for (t, p) in offsets if t != "skip-me"]
        committed = {
            (tp.topic[len(PREFIX) :], tp.partition): tp.offset
            for tp in c.committed(tps, timeout=30)
        }
        c.close()
        for (t, p), src_offset in offsets.items():
            if t == "skip-me":
                continue
            before = sum(1 for o in w.source_offsets[t][p] if o < src_offset)
            target_before = _records_below(boot, PREFIX + t, p, committed[(t, p)])
            assert target_before == before, (g, t, p, src_offset, committed[(t, p)])


def _records_below(boot: str, topic: str, partition: int, offset: int) -> int:
    got = read_to_end(boot, topic, [partition], timeout_s=60)
    return sum(1 for r in got[partition] if r.offset < offset)


def test_the_plan_names_the_replication_factor_and_estimates(
    world: tuple[World, SecuredCluster],
) -> None:
    w, sec = world
    args = _restore_args(w, sec, "admin", prefix="p.")
    code, lines, out = cli("restore", "plan", *args, "--json")
    assert code == 1, out
    plan = lines[-1]
    rf = [p for p in plan["problems"] if p["code"] == "replication_factor"]
    seen = {
        t["source"]: (t["replication_factor"], t["partitions_at_t"], t["configs_at_t"], t["notes"])
        for t in plan["topics"]
        if t["source"] not in {p["topic"] for p in rf}
    }
    assert {p["topic"] for p in rf} == set(TOPICS) - {"skip-me"}, seen
    assert "--replication-factor 1" in rf[0]["hint"]
    topics = {t["source"]: t for t in plan["topics"]}
    assert set(topics) == set(TOPICS) - {"skip-me"} | {"late-topic"}
    assert topics["late-topic"]["empty"] and not topics["orders"]["empty"]
    assert plan["topics"][0]["source"] == "_schemas"
    assert plan["estimate"]["bytes"] > 0 and plan["estimate"]["seconds"] >= 0
    assert {g["group"] for g in plan["groups"]} == set(GROUPS)
    assert next(g for g in plan["groups"] if g["group"] == "mixed")["outside"] == ["skip-me"]
