"""Unit tests: object keys, the manifest contract, configuration, and the planner's rules on
hand-made candidates (no broker files needed: the planner works on discovery results)."""

from __future__ import annotations

import hashlib
import json
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.airflow.archive_tasks import queue_groups, resolve_targets
from kafka_archive.archive import (
    MANIFEST_FORMAT_VERSION,
    ConfigError,
    InvalidManifest,
    SegmentManifest,
    UnsupportedManifestVersion,
    iter_manifests,
    parse_manifest,
    plan_cluster,
)
from kafka_archive.archive.config import (
    DEFAULT_SCHEDULE,
    ArchiveConfig,
    load_config,
    parse_schedule,
    parse_time_config,
    parse_time_schedule,
)
from kafka_archive.archive.discovery import (
    LocalFile,
    LogDirDiscovery,
    SegmentCandidate,
    epochs_for_range,
)
from kafka_archive.archive.layout import (
    manifest_key,
    object_key,
    parse_manifest_key,
    quarantine_prefix,
    topic_from_key_segment,
    topic_key_segment,
)
from kafka_archive.archive.manifest import ManifestFile, SegmentSource
from kafka_archive.store import LocalStore

from segment_lib.checkpoints import EpochEntry

SHA = hashlib.sha256(b"x").hexdigest()

# ------------------------------------------------------------------------------------ layout


def test_keys_follow_the_documented_layout() -> None:
    assert object_key("prod", "orders", 3, 170410, SHA, ".log") == (
        f"prod/orders/3/00000000000000170410-{SHA[:16]}.log"
    )
    assert manifest_key("prod", "orders", 3, 170410, SHA) == (
        f"prod/orders/3/manifests/00000000000000170410-{SHA[:16]}.json"
    )
    assert quarantine_prefix("prod", "orders", 3, 5, SHA) == (
        f"prod/_quarantine/orders/3/00000000000000000005-{SHA[:16]}/"
    )


@pytest.mark.parametrize(
    ("topic", "segment"),
    [
        ("orders", "orders"),
        ("__consumer_offsets", "__consumer_offsets"),
        (".hidden", "%2Ehidden"),
        ("..", "%2E."),
        (".ka-x", "%2Eka-x"),
        ("_quarantine", "%5Fquarantine"),
    ],
)
def test_topic_key_segments_are_safe_and_reversible(topic: str, segment: str) -> None:
    assert topic_key_segment(topic) == segment
    assert topic_from_key_segment(segment) == topic
    key = manifest_key("c", topic, 0, 1, SHA)
    parsed = parse_manifest_key(key)
    assert parsed is not None and parsed.topic == topic and parsed.base_offset == 1


@pytest.mark.parametrize(
    "key",
    [
        "c/orders/0/00000000000000000000-0123456789abcdef.log",
        "c/_quarantine/orders/0/00000000000000000000-0123456789abcdef/error.json",
        "c/orders/x/manifests/00000000000000000000-0123456789abcdef.json",
        "c/orders/0/manifests/0000000000000000000-0123456789abcdef.json",
        "c/orders/0/manifests/00000000000000000000-0123456789ABCDEF.json",
    ],
)
def test_parse_manifest_key_rejects_other_keys(key: str) -> None:
    assert parse_manifest_key(key) is None


@pytest.mark.parametrize(
    "bad", [("bad/cluster", "t", 0), ("c", "bad topic", 0), ("c", "t", -1), ("c", "t", 2**31)]
)
def test_layout_rejects_bad_names(bad: tuple[str, str, int]) -> None:
    with pytest.raises(ValueError):
        manifest_key(bad[0], bad[1], bad[2], 0, SHA)


# ---------------------------------------------------------------------------------- manifest


def _manifest(**over: Any) -> SegmentManifest:
    fields: dict[str, Any] = dict(
        cluster="c",
        topic="t",
        topic_id="AAAAAAAAAAAAAAAAAAAAAQ",
        partition=0,
        base_offset=0,
        end_offset=10,
        first_offset=0,
        last_offset=9,
        batch_count=1,
        record_count=10,
        first_timestamp=1,
        max_timestamp=2,
        offset_of_max_timestamp=9,
        magics=[2],
        codecs=["none"],
        transactional_batches=0,
        control_batches=0,
        batch_leader_epochs=[0],
        leader_epochs=[],
        segment_sha256=SHA,
        files=[
            ManifestFile(
                role="log",
                name="00000000000000000000.log",
                key=object_key("c", "t", 0, 0, SHA, ".log"),
                size=1,
                sha256=SHA,
                crc32c="00000000",
            )
        ],
        source=SegmentSource(broker_id=1, log_dir="/d", partition_dir="t-0", log_mtime_ms=0),
        archived_at=datetime(2024, 1, 1, tzinfo=UTC),
        archiver_version="test",
    )
    fields.update(over)
    return SegmentManifest(**fields)


def test_manifest_round_trips_and_is_versioned() -> None:
    m = _manifest()
    raw = json.loads(m.to_json_bytes())
    assert raw["format_version"] == MANIFEST_FORMAT_VERSION == 1
    assert raw["kind"] == "kafka-archive/segment-manifest" and raw["status"] == "archived"
    assert parse_manifest(m.to_json_bytes()) == m
    # readers ignore fields added later within the same format version
    raw["added_in_a_later_release"] = {"x": 1}
    assert parse_manifest(json.dumps(raw).encode()) == m


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"format_version": 2}, UnsupportedManifestVersion),
        ({"format_version": "1"}, InvalidManifest),
        ({"kind": "something-else"}, InvalidManifest),
        ({"segment_sha256": "zz"}, InvalidManifest),
        ({"archived_at": "2024-01-01T00:00:00"}, InvalidManifest),  # no timezone
    ],
)
def test_invalid_manifests_are_rejected(change: dict[str, Any], error: type[Exception]) -> None:
    raw = json.loads(_manifest().to_json_bytes())
    raw.update(change)
    with pytest.raises(error):
        parse_manifest(json.dumps(raw).encode(), key="k")
    with pytest.raises(InvalidManifest):
        parse_manifest(b"not json")


def test_iter_manifests_lists_only_manifests(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, fsync=False)
    m = _manifest()
    store.put_bytes(manifest_key("c", "t", 0, 0, SHA), m.to_json_bytes())
    store.put_bytes(object_key("c", "t", 0, 0, SHA, ".log"), b"x")
    store.put_bytes(quarantine_prefix("c", "t", 0, 0, SHA) + "error.json", b"{}")
    store.put_bytes(manifest_key("other", "t", 0, 0, SHA), m.to_json_bytes())
    assert list(iter_manifests(store, "c")) == [m]
    assert list(iter_manifests(store, "c", "t", 0)) == [m]
    assert list(iter_manifests(store, "c", "u")) == []
    store.put_bytes(manifest_key("c", "t", 0, 5, SHA), b"garbage")
    with pytest.raises(InvalidManifest):
        list(iter_manifests(store, "c"))
    assert list(iter_manifests(store, "c", on_error="skip")) == [m]


def test_epochs_for_range() -> None:
    entries = [EpochEntry(0, 0), EpochEntry(3, 100), EpochEntry(5, 250)]
    assert [e.epoch for e in epochs_for_range(entries, 0, 100)] == [0]
    assert [e.epoch for e in epochs_for_range(entries, 50, 101)] == [0, 3]
    assert [e.epoch for e in epochs_for_range(entries, 100, 250)] == [3]
    assert [e.epoch for e in epochs_for_range(entries, 300, 400)] == [5]
    assert epochs_for_range([], 0, 10) == []


# ------------------------------------------------------------------------------------ config

CONFIG_YAML = """
store_uri: s3://bucket/prefix
store_options: {sse: AES256}
schedule: "*/5 * * * *"
clusters:
  - name: prod
    brokers:
      - {id: 1, log_dirs: [/data/a, /data/b], queue: kafka-broker-1}
      - {id: 2, log_dirs: [/data/a]}
  - name: dr
    store_uri: file:///srv/dr
    brokers:
      - {id: 1, log_dirs: [/k]}
"""


def test_config_targets_queues_and_store_override(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG_YAML)
    cfg = load_config(None, environ={"KAFKA_ARCHIVE_CONFIG": str(path)})
    targets = cfg.targets()
    assert [(t.cluster, t.broker_id, t.log_dir, t.queue) for t in targets] == [
        ("prod", 1, "/data/a", "kafka-broker-1"),
        ("prod", 1, "/data/b", "kafka-broker-1"),
        ("prod", 2, "/data/a", None),
        ("dr", 1, "/k", None),
    ]
    assert (
        targets[-1].store_uri == "file:///srv/dr" and targets[0].store_uri == "s3://bucket/prefix"
    )
    assert cfg.queues() == [None, "kafka-broker-1"]
    assert [t.cluster for t in cfg.targets(["dr"])] == ["dr"]
    with pytest.raises(ConfigError):
        cfg.targets(["nope"])
    # the Airflow Variable (JSON) wins over the file
    as_json = json.dumps(
        {
            "store_uri": "file:///x",
            "clusters": [{"name": "v", "brokers": [{"id": 3, "log_dirs": ["/v"]}]}],
        }
    )
    assert load_config(as_json, environ={"KAFKA_ARCHIVE_CONFIG": str(path)}).clusters[0].name == "v"


@pytest.mark.parametrize(
    "bad",
    [
        {"store_uri": "x", "clusters": []},
        {
            "store_uri": "x",
            "clusters": [{"name": "a/b", "brokers": [{"id": 1, "log_dirs": ["/d"]}]}],
        },
        {
            "store_uri": "x",
            "clusters": [{"name": "a", "brokers": [{"id": 1, "log_dirs": ["rel"]}]}],
        },
        {
            "store_uri": "x",
            "clusters": [
                {
                    "name": "a",
                    "brokers": [{"id": 1, "log_dirs": ["/d"]}, {"id": 1, "log_dirs": ["/e"]}],
                }
            ],
        },
        {
            "store_uri": "x",
            "schedule": "every now and then",
            "clusters": [{"name": "a", "brokers": [{"id": 1, "log_dirs": ["/d"]}]}],
        },
        {
            "store_uri": "x",
            "unknown": 1,
            "clusters": [{"name": "a", "brokers": [{"id": 1, "log_dirs": ["/d"]}]}],
        },
    ],
)
def test_invalid_configs_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        load_config(json.dumps(bad), environ={})


def test_missing_config_says_where_to_put_it() -> None:
    with pytest.raises(ConfigError, match="kafka_archive_config"):
        load_config(None, environ={})


def test_parse_time_config_and_schedule(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(CONFIG_YAML)
    env = {"KAFKA_ARCHIVE_CONFIG": str(path)}
    cfg = parse_time_config(env)
    assert cfg is not None and cfg.schedule == "*/5 * * * *"
    assert parse_time_schedule(env, cfg) == "*/5 * * * *"
    assert parse_time_schedule({**env, "KAFKA_ARCHIVE_SCHEDULE": "PT15M"}, cfg) == timedelta(
        minutes=15
    )
    assert parse_time_schedule({"AIRFLOW_VAR_KAFKA_ARCHIVE_SCHEDULE": "@hourly"}) == "@hourly"
    # a broken override or config never breaks DAG parsing
    assert parse_time_schedule({"KAFKA_ARCHIVE_SCHEDULE": "nonsense"}, cfg) == "*/5 * * * *"
    assert parse_time_schedule({}) == DEFAULT_SCHEDULE
    (tmp_path / "bad.yaml").write_text("store_uri: [")
    assert parse_time_config({"KAFKA_ARCHIVE_CONFIG": str(tmp_path / "bad.yaml")}) is None
    assert parse_time_config({}) is None
    with pytest.raises(ValueError):
        parse_schedule("@sometimes")


def test_queue_groups_and_targets_must_agree() -> None:
    import yaml

    cfg = ArchiveConfig.model_validate(yaml.safe_load(CONFIG_YAML))
    groups = queue_groups(cfg)
    assert [(g.key, g.queue, g.discover_task_id, g.archive_task_id) for g in groups] == [
        ("default_queue", None, "discover", "archive"),
        (
            "q_kafka_broker_1",
            "kafka-broker-1",
            "discover__q_kafka_broker_1",
            "archive__q_kafka_broker_1",
        ),
    ]
    by_group = resolve_targets(cfg, groups)
    assert [t["log_dir"] for t in by_group["q_kafka_broker_1"]] == ["/data/a", "/data/b"]
    assert len(by_group["default_queue"]) == 2
    # a DAG parsed without the queue cannot run this config: say so instead of misrouting
    with pytest.raises(ConfigError, match="parsed with queues"):
        resolve_targets(cfg, queue_groups(None))


# ----------------------------------------------------------------------------------- planner


def cand(
    broker: int, base: int, end: int, tag: str = "", *, log_dir: str = "/d", topic: str = "t"
) -> SegmentCandidate:
    """A candidate whose bytes are identified by (base, end, tag): same tag = same bytes."""
    sha = hashlib.sha256(f"{base}-{end}-{tag}".encode()).hexdigest()
    return SegmentCandidate(
        cluster="c",
        broker_id=broker,
        log_dir=f"{log_dir}{broker}",
        partition_dir=f"{topic}-0",
        topic=topic,
        partition=0,
        topic_id=None,
        base_offset=base,
        end_offset=end,
        log=LocalFile(name=f"{base:020d}.log", size=end - base, mtime_ns=0),
        log_sha256=sha,
    )


def disc(broker: int, *cands: SegmentCandidate) -> LogDirDiscovery:
    return LogDirDiscovery(
        cluster="c",
        broker_id=broker,
        log_dir=f"/d{broker}",
        hostname="h",
        discovered_at=datetime.now(UTC),
        candidates=list(cands),
    )


def archive_as_manifest(store: LocalStore, c: SegmentCandidate) -> str:
    key = manifest_key("c", c.topic, 0, c.base_offset, c.log_sha256)
    m = _manifest(
        topic=c.topic,
        base_offset=c.base_offset,
        end_offset=c.end_offset,
        first_offset=c.base_offset,
        last_offset=c.end_offset - 1,
        segment_sha256=c.log_sha256,
        source=SegmentSource(
            broker_id=c.broker_id, log_dir=c.log_dir, partition_dir=c.partition_dir, log_mtime_ms=0
        ),
    )
    store.put_bytes(key, m.to_json_bytes())
    return key


def planned(plan: Any) -> list[tuple[int, int, int]]:
    return sorted(
        (t.candidate.broker_id, t.candidate.base_offset, t.candidate.end_offset)
        for lp in plan.log_dirs
        for t in lp.tasks
    )


def test_lowest_broker_wins_and_the_plan_is_deterministic(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, fsync=False)
    d1 = disc(1, cand(1, 0, 100), cand(1, 100, 200))
    d2 = disc(2, cand(2, 0, 150), cand(2, 150, 200))
    d3 = disc(3, cand(3, 0, 200))
    plans = []
    for _ in range(5):
        ds = [d1, d2, d3]
        random.shuffle(ds)
        plans.append(plan_cluster("c", ds, store))
    assert all(planned(p) == [(1, 0, 100), (1, 100, 200)] for p in plans)
    skipped = {(s.broker_id, s.base_offset): s.reason for s in plans[0].skipped}
    assert skipped == {(2, 0): "other_replica", (2, 150): "other_replica", (3, 0): "other_replica"}


def test_partial_coverage_is_archived_with_overlaps_on_both_sides(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, fsync=False)
    # broker 1 lost [0, 100) to retention; broker 2 rolled at 0 and 150
    plan = plan_cluster(
        "c", [disc(1, cand(1, 100, 200)), disc(2, cand(2, 0, 150), cand(2, 150, 200))], store
    )
    assert planned(plan) == [(1, 100, 200), (2, 0, 150)]
    tasks = {t.candidate.broker_id: t for lp in plan.log_dirs for t in lp.tasks}
    [o2] = tasks[2].overlaps
    [o1] = tasks[1].overlaps
    assert (o2.broker_id, o2.overlap_start, o2.overlap_end, o2.relation) == (1, 100, 150, "replica")
    assert (o1.broker_id, o1.overlap_start, o1.overlap_end) == (2, 100, 150)
    assert o1.manifest_key == tasks[2].manifest_key and o2.manifest_key == tasks[1].manifest_key


def test_archived_ranges_are_respected_across_runs(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, fsync=False)
    k = archive_as_manifest(store, cand(2, 0, 150))  # broker 2 archived first (e.g. its CLI)
    plan = plan_cluster("c", [disc(1, cand(1, 0, 100), cand(1, 100, 200))], store)
    assert planned(plan) == [(1, 100, 200)]
    [skip] = plan.skipped
    assert (skip.base_offset, skip.reason) == (0, "other_replica") and k in skip.detail
    [task] = plan.log_dirs[0].tasks
    assert [(o.manifest_key, o.overlap_start, o.overlap_end) for o in task.overlaps] == [
        (k, 100, 150)
    ]


def test_same_bytes_are_already_archived(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, fsync=False)
    c = cand(1, 0, 100, "v1")
    key = archive_as_manifest(store, c)
    plan = plan_cluster("c", [disc(1, c), disc(2, cand(2, 0, 100, "v1"))], store)
    assert planned(plan) == []
    assert {(s.broker_id, s.reason, s.manifest_key) for s in plan.skipped} == {
        (1, "already_archived", key),
        (2, "already_archived", key),
    }


def test_compaction_rewrite_is_a_new_version_only_for_its_own_broker(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, fsync=False)
    old0 = archive_as_manifest(store, cand(1, 0, 100, "v1"))
    old1 = archive_as_manifest(store, cand(1, 100, 200, "v1"))
    # broker 1's cleaner merged both into one segment at base 0; broker 2 compacted its copy
    plan = plan_cluster(
        "c", [disc(1, cand(1, 0, 200, "v2")), disc(2, cand(2, 0, 200, "w2"))], store
    )
    assert planned(plan) == [(1, 0, 200)]
    [task] = [t for lp in plan.log_dirs for t in lp.tasks]
    assert task.supersedes == sorted([old0, old1])
    assert {o.relation for o in task.overlaps} == {"previous_version"}
    assert [(s.broker_id, s.reason) for s in plan.skipped] == [(2, "other_replica")]


def test_quarantined_segments_yield_to_a_healthy_replica(tmp_path: Path) -> None:
    store = LocalStore(tmp_path, fsync=False)
    bad = cand(1, 0, 100, "rot")
    store.put_bytes(quarantine_prefix("c", "t", 0, 0, bad.log_sha256) + "error.json", b"{}")
    plan = plan_cluster("c", [disc(1, bad), disc(2, cand(2, 0, 100, "ok"))], store)
    assert planned(plan) == [(2, 0, 100)]
    assert [(s.broker_id, s.reason) for s in plan.skipped] == [(1, "quarantined_replaced")]
    # with no healthy replica it is planned again (and will fail again)
    alone = plan_cluster("c", [disc(1, bad)], store)
    [task] = alone.log_dirs[0].tasks
    assert task.known_corrupt
