"""The metadata history: replaying metadata log entries (hand-built in Kafka's JSON forms) into
the catalog, the state at every moment, idempotent and resumable builds, snapshots after gaps,
unknown records, and no SCRAM secret stored."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_archive.catalog.db import open_catalog
from kafka_archive.metadata_history.queries import resolved_configs
from kafka_archive.services.metadata_history import MetadataHistoryService
from sqlalchemy import text
from support.metadata_entries import (
    ACL_1,
    SECRET_SALT,
    TOPIC_A,
    TOPIC_B,
    Entry,
    Rec,
    entry,
    scripted_history,
)

pytest_plugins = ["support.postgres"]

C = "prod"


@pytest.fixture(params=["sqlite", "postgresql"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> MetadataHistoryService:
    """The service over a fresh catalog, on SQLite and on PostgreSQL."""
    url = (
        str(tmp_path / "catalog.db")
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    return MetadataHistoryService(catalog=open_catalog(url, create=True))


def _dump(svc: MetadataHistoryService) -> dict[str, list[tuple[object, ...]]]:
    """Every history row, by table (to compare builds)."""
    out = {}
    with svc.resources.catalog().engine.connect() as conn:
        for t in ("mh_topics", "mh_partitions", "mh_configs", "mh_acls", "mh_scram_users"):
            out[t] = sorted(map(tuple, conn.execute(text(f"SELECT * FROM {t}")).all()))
        out["mh_features"] = sorted(map(tuple, conn.execute(text("SELECT * FROM mh_features"))))
    return out


def test_state_at_every_moment(service: MetadataHistoryService) -> None:
    report = service.build(C, scripted_history())
    assert report.last_seq == 16 and report.unknown == 0 and report.gaps == []

    assert service.topic_at(C, "orders", 2_999) is None  # configs came first, topic at 3 s
    s = service.topic_at(C, "orders", 5_000)
    assert s is not None
    assert (s.topic_id, s.partitions, s.source) == (TOPIC_A, 2, "metadata_log")
    assert s.replicas == {0: [1, 2, 3], 1: [2, 3, 1]}
    assert s.leaders == {0: 1, 1: 2}
    assert s.configs == {"retention.ms": "1000"}
    assert s.as_of_ms == 5_000 and s.resolution_note is None

    s = service.topic_at(C, "orders", 8_500)
    assert s is not None and s.partitions == 3 and s.leaders == {0: 2, 1: 2, 2: 3}
    assert s.replicas[0] == [1, 2, 3]  # a leader change keeps the replicas

    s = service.topic_at(C, "orders", 11_000)
    assert s is not None and s.configs == {"cleanup.policy": "compact", "retention.ms": "1000"}

    assert service.topic_at(C, "orders", 12_500) is None  # deleted at 12 s, back at 13 s
    s = service.topic_at(C, "orders", 14_000)
    assert s is not None and s.topic_id == TOPIC_B and s.partitions == 1
    assert s.configs == {}  # the old incarnation's overrides went with it
    s = service.topic_at(C, "orders", 16_000)
    assert s is not None and s.leaders == {0: -1}

    incs = service.incarnations(C, "orders")
    assert [(i.topic_id, i.created_ms, i.deleted_ms) for i in incs] == [
        (TOPIC_A, 3_000, 12_000),
        (TOPIC_B, 13_000, None),
    ]


def test_resolved_configs_mark_their_source(service: MetadataHistoryService) -> None:
    service.build(C, scripted_history())
    with service.resources.catalog().engine.connect() as conn:
        before = service.topic_at(C, "orders", 5_000)
        assert before is not None
        values = {r.name: (r.value, r.source) for r in resolved_configs(conn, C, before, 5_000)}
        assert values["retention.ms"] == ("1000", "topic")
        assert values["segment.bytes"] == ("1073741824", "kafka_default")
        later = service.topic_at(C, "orders", 14_000)
        assert later is not None
        values = {r.name: (r.value, r.source) for r in resolved_configs(conn, C, later, 14_000)}
        assert values["retention.ms"] == ("5000", "cluster_default")


def test_topic_history_names_each_record(service: MetadataHistoryService) -> None:
    service.build(C, scripted_history())
    events = [
        (e.seq, e.topic_id, e.what, e.record_type) for e in service.topic_history(C, "orders")
    ]
    assert events == [
        (2, TOPIC_A, "config retention.ms = 1000", "CONFIG_RECORD"),
        (3, TOPIC_A, "created", "TOPIC_RECORD"),
        (4, TOPIC_A, "partition 0 added", "PARTITION_RECORD"),
        (5, TOPIC_A, "partition 1 added", "PARTITION_RECORD"),
        (7, TOPIC_A, "partition 0: leader changed", "PARTITION_CHANGE_RECORD"),
        (8, TOPIC_A, "partition 2 added", "PARTITION_RECORD"),
        (11, TOPIC_A, "config cleanup.policy = compact", "CONFIG_RECORD"),
        (12, TOPIC_A, "config cleanup.policy deleted", "REMOVE_TOPIC_RECORD"),
        (12, TOPIC_A, "config retention.ms deleted", "REMOVE_TOPIC_RECORD"),
        (12, TOPIC_A, "deleted", "REMOVE_TOPIC_RECORD"),
        (13, TOPIC_B, "created", "TOPIC_RECORD"),
        (14, TOPIC_B, "partition 0 added", "PARTITION_RECORD"),
        (16, TOPIC_B, "partition 0: leader changed", "PARTITION_CHANGE_RECORD"),
    ]


def test_acls_at(service: MetadataHistoryService) -> None:
    service.build(C, scripted_history())
    assert service.acls_at(C, 8_000) == ([], None)
    acls, note = service.acls_at(C, 9_000)
    assert note is None
    assert [
        (a.acl_id, a.resource_type, a.pattern_type, a.operation, a.permission_type) for a in acls
    ] == [(ACL_1, "TOPIC", "LITERAL", "READ", "ALLOW")]
    assert service.acls_at(C, 15_000)[0] == []


def test_rebuild_is_idempotent_and_resumes(service: MetadataHistoryService, tmp_path: Path) -> None:
    entries = scripted_history()
    service.build(C, entries)
    once = _dump(service)
    again = service.build(C, entries)
    assert again.changes == 0 and again.skipped == len(entries)
    assert _dump(service) == once

    halves = MetadataHistoryService(catalog=open_catalog(tmp_path / "halves.db", create=True))
    halves.build(C, entries[:9])
    second = halves.build(C, entries)  # the whole log again: the first 9 are skipped
    assert second.skipped == 9
    assert _dump(halves) == once


def test_snapshot_after_a_gap_resets_state_and_records_differences(
    service: MetadataHistoryService,
) -> None:
    service.build(C, scripted_history()[:9])  # up to offset 8
    snap = "101-3"  # state at offset 100: orders (B) only, retention override on it
    snapshot = [
        Entry(
            0, 50_000, Rec("TOPIC_RECORD", {"name": "orders", "topicId": TOPIC_B}), snapshot_id=snap
        ),
        Entry(
            1,
            50_000,
            Rec(
                "PARTITION_RECORD",
                {"partitionId": 0, "topicId": TOPIC_B, "replicas": [1], "isr": [1], "leader": 1},
            ),
            snapshot_id=snap,
        ),
        Entry(
            2,
            50_000,
            Rec(
                "CONFIG_RECORD",
                {"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "9"},
            ),
            snapshot_id=snap,
        ),
    ]
    report = service.build(
        C,
        [
            *snapshot,
            entry(101, "FEATURE_LEVEL_RECORD", {"name": "x", "featureLevel": 1}, ts=60_000),
        ],
    )
    assert report.snapshots == [snap] and report.last_seq == 101
    s = service.topic_at(C, "orders", 50_000)
    assert s is not None and s.topic_id == TOPIC_B and s.configs == {"retention.ms": "9"}
    hist = [(e.seq, e.what, e.snapshot_id) for e in service.topic_history(C, "orders")]
    assert (100, "deleted", None) in hist and (100, "config retention.ms = 9", snap) in hist


def test_unknown_records_are_reported_not_applied(service: MetadataHistoryService) -> None:
    bad = Entry(
        3, 3_000, Rec("UNKNOWN", {}, type_id=99, error="unknown type 99 at byte 12 of x.log")
    )
    report = service.build(C, [*scripted_history()[:3], bad, *scripted_history()[4:6]])
    assert report.unknown == 1 and report.errors == ["unknown type 99 at byte 12 of x.log"]
    assert report.last_seq == 5


def test_scram_users_keep_no_secret(service: MetadataHistoryService) -> None:
    service.build(C, scripted_history())
    dump = repr(_dump(service))
    assert "8192" in repr(_dump(service)["mh_scram_users"])
    assert SECRET_SALT not in dump
    from sqlalchemy import inspect

    cols = [
        c["name"] for c in inspect(service.resources.catalog().engine).get_columns("mh_scram_users")
    ]
    assert not {"salt", "stored_key", "server_key", "salted_password"} & set(cols)


def test_a_history_that_begins_with_a_snapshot_is_unknown_before_it(
    service: MetadataHistoryService,
) -> None:
    """The log before the snapshot was not archived: before the snapshot's time the answer is
    "unknown" (a typed error naming the snapshot), not "no topic" / "no ACL"."""
    from kafka_archive.services.metadata_history import MetadataHistoryError

    snap = "101-3"
    service.build(
        C,
        [
            Entry(
                0,
                50_000,
                Rec("TOPIC_RECORD", {"name": "orders", "topicId": TOPIC_B}),
                snapshot_id=snap,
            ),
            Entry(
                1,
                50_000,
                Rec(
                    "PARTITION_RECORD",
                    {
                        "partitionId": 0,
                        "topicId": TOPIC_B,
                        "replicas": [1],
                        "isr": [1],
                        "leader": 1,
                    },
                ),
                snapshot_id=snap,
            ),
            entry(101, "FEATURE_LEVEL_RECORD", {"name": "x", "featureLevel": 1}, ts=60_000),
        ],
    )
    for ask in (lambda t: service.topic_at(C, "orders", t), lambda t: service.acls_at(C, t)):
        with pytest.raises(MetadataHistoryError, match=f"unknown before .*snapshot {snap}"):
            ask(49_999)
    s = service.topic_at(C, "orders", 50_000)
    assert s is not None and s.topic_id == TOPIC_B
    assert service.acls_at(C, 50_000)[0] == []
    # a replay starting before the history notes it and goes on with the archive's partitions
    from kafka_archive.replay.planning.topic_config import topic_settings

    got = topic_settings(
        service,
        cluster=C,
        topic="orders",
        at_ms=49_999,
        overrides={},
        use_source=True,
        archive_partitions=5,
    )
    assert not got.found and got.source_configs == {}
    assert any("unknown before" in n and "(5) comes from the archive" in n for n in got.notes)
    # the topic was not created at the snapshot's time: the history says it already existed
    first = service.topic_history(C, "orders")[0]
    assert (first.what, first.snapshot_id) == (
        "exists when the history begins (created earlier)",
        snap,
    )


def test_a_history_from_the_log_start_is_known_before_its_first_topic(
    service: MetadataHistoryService,
) -> None:
    service.build(C, scripted_history())
    assert service.topic_at(C, "orders", 0) is None
    assert service.acls_at(C, 0)[0] == []


def test_admin_topic_ids_are_in_kafkas_form() -> None:
    """confluent-kafka prints a Uuid in standard base64; Kafka (and the metadata log, and
    partition.metadata) in URL-safe base64: an Admin API snapshot keeps Kafka's form."""
    from confluent_kafka import Uuid
    from kafka_archive.metadata_history.admin import kafka_topic_id

    from segment_lib.metadata_files import decode_kafka_uuid

    u = Uuid(-1, 5)  # bytes ff..ff 00..05: '/' in standard base64
    assert "/" in str(u)
    assert kafka_topic_id(u) == "__________8AAAAAAAAABQ"
    assert decode_kafka_uuid(kafka_topic_id(u)).int == ((1 << 64) - 1) << 64 | 5
    assert kafka_topic_id(Uuid(1, 2)) == str(Uuid(1, 2))  # no difference without '/', '+'


def test_an_admin_snapshot_history_is_unknown_before_its_first_snapshot(
    service: MetadataHistoryService,
) -> None:
    """Before the first Admin API snapshot nothing was seen: the answer is "unknown", never
    "no such topic"; from the snapshot on, the snapshot's state."""
    from kafka_archive.metadata_history.admin import AdminSnapshot, record_admin_snapshot
    from kafka_archive.metadata_history.state import ClusterState, PartitionInfo
    from kafka_archive.services.metadata_history import MetadataHistoryUnknown

    tid = "AAAAAAAAAAAAAAAAAAAAAQ"
    state = ClusterState(
        topics={tid: "orders"},
        partitions={(tid, 0): PartitionInfo(replicas=(1,), isr=(1,), leader=1, leader_epoch=0)},
    )
    with service.resources.catalog().engine.begin() as conn:
        record_admin_snapshot(conn, C, AdminSnapshot(state, acls_available=False), 5_000)
    with pytest.raises(MetadataHistoryUnknown, match="Admin API snapshots"):
        service.topic_at(C, "orders", 4_999)
    got = service.topic_at(C, "orders", 5_000)
    assert got is not None and got.topic_id == tid and got.partitions == 1
    assert got.source == "admin_snapshot"
