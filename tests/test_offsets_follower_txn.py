"""Issue 20, point 4, the follower alone: a transactional offset commit it reads counts at its
COMMIT marker, not at its record.

The raw batches come from a fake source made by this project's segment writer
(:class:`support.raw_batches.LogRawSource`), answered like a broker's Fetch (whole batches,
cut at a small size limit with a partial batch left over). Checked: the resolver maps the
offsets a read_committed consumer delivers to their markers (plain ones to nothing), its
state is pruned and a re-read below it rescans; through :func:`apply_batch` and the follower
loop (against librdkafka's mock cluster, the raw reader mirroring it), ``group-offsets --at``
between the TxnOffsetCommit record and the marker answers the previous commit; the settings
mapping of the raw reader, and its refusal naming a setting it cannot apply, never a value.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.models import FollowedCommitRow
from kafka_archive.catalog.queries import group_commit_history, group_offsets
from kafka_archive.offsets_follower.follower import (
    CONSUMER_OFFSETS_TOPIC,
    ReadRecord,
    apply_batch,
)
from kafka_archive.offsets_follower.loop import follow_offsets
from kafka_archive.offsets_follower.raw_batches import (
    UnsupportedRawSetting,
    kafka_python_config,
    parse_batches,
)
from kafka_archive.offsets_follower.txn_moments import TxnMomentResolver
from kafka_archive_dev.embedded_kafka import EmbeddedKafka
from sqlalchemy import select
from support.raw_batches import LogRawSource, mirror_raw_source

from segment_lib.consumer_offsets import encode_offset_commit_key, encode_offset_commit_value

CLUSTER = "c1"


def _commit(group: str, offset: int, ts: int) -> tuple[int, bytes, bytes]:
    return (
        ts,
        encode_offset_commit_key(group, "t", 0),
        encode_offset_commit_value(offset=offset, commit_timestamp=ts),
    )


def _log(source: LogRawSource) -> dict[str, int]:
    """Partition 0 of ``__consumer_offsets``: a plain commit (5), producer 7's transaction
    committing 10 whose marker comes after producer 8's aborted one (20) and a plain commit
    of another group; offsets by name."""
    at = {}
    at["plain"] = source.plain(0, [_commit("g", 5, 1000)])
    at["txn"] = source.txn(0, 7, [_commit("g", 10, 2000)])
    at["aborted"] = source.txn(0, 8, [_commit("g", 20, 2100)])
    at["other"] = source.plain(0, [_commit("h", 1, 2200)])
    at["abort"] = source.marker(0, 8, commit=False, timestamp=2300)
    at["commit"] = source.marker(0, 7, commit=True, timestamp=3000)
    at["after"] = source.plain(0, [_commit("g", 30, 4000)])
    return at


def test_parse_batches_drops_a_trailing_partial_batch() -> None:
    source = LogRawSource()
    at = _log(source)
    whole = b"".join(b.data for b in source.logs[0])
    assert [b.base_offset for b in parse_batches(whole)] == list(range(at["after"] + 1))
    cut = parse_batches(whole[:-5])
    assert [b.base_offset for b in cut] == list(range(at["after"]))
    commit = cut[at["commit"]]
    assert (commit.control, commit.marker, commit.marker_offset, commit.marker_ts) == (
        True,
        "commit",
        at["commit"],
        3000,
    )
    assert cut[at["abort"]].marker == "abort"
    assert (cut[at["txn"]].transactional, cut[at["txn"]].producer_id) == (True, 7)
    assert not cut[at["plain"]].transactional


@pytest.mark.parametrize("max_bytes", [1, 200, 1 << 20])
def test_resolver_maps_delivered_offsets_to_their_commit_marker(max_bytes: int) -> None:
    source = LogRawSource(max_bytes=max_bytes)
    at = _log(source)
    resolver = TxnMomentResolver(source)
    # what read_committed delivers: not the aborted record, not the markers
    delivered = [at["plain"], at["txn"], at["other"]]
    assert resolver.resolve(0, delivered) == {at["txn"]: (at["commit"], 3000)}
    assert resolver.resolve(0, [at["after"]]) == {}
    assert resolver.unresolved == 0
    # pruned below the consumer's position; a re-read below it (a position conflict) rescans
    resolver.prune(0, at["after"] + 1)
    scan = resolver._scans[0]
    assert all(last >= at["after"] for _, last, _, _ in scan.spans) and scan.markers == {}
    assert resolver.resolve(0, [at["txn"]]) == {at["txn"]: (at["commit"], 3000)}
    resolver.close()
    assert source.closed


def test_a_marker_not_in_the_log_leaves_the_record_time_and_is_counted() -> None:
    source = LogRawSource()
    off = source.txn(0, 9, [_commit("g", 1, 100)])
    resolver = TxnMomentResolver(source, max_idle_fetches=2)
    assert resolver.resolve(0, [off]) == {}
    assert resolver.unresolved == 1


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Catalog]:
    cat = open_catalog(f"sqlite:///{tmp_path / 'catalog.db'}", create=True)
    try:
        yield cat
    finally:
        cat.close()


def _at(cat: Catalog, t: int) -> int:
    (got,) = group_offsets(cat, CLUSTER, "g", t)
    return got.offset


def _check_moments(cat: Catalog) -> None:
    """Between the TxnOffsetCommit record (2000) and its COMMIT marker (3000) the plain commit
    (5) stands; from the marker on, 10; the aborted 20 never."""
    assert [_at(cat, t) for t in (1000, 2000, 2500, 2999, 3000, 3999, 4000)] == [
        5,
        5,
        5,
        5,
        10,
        10,
        30,
    ]
    history = group_commit_history(cat, CLUSTER, "g")
    assert [(c.offset, c.visible_ts) for c in history] == [(5, 1000), (10, 3000), (30, 4000)]
    fc = FollowedCommitRow
    with cat.session() as s:
        rows = s.execute(
            select(fc.committed_offset, fc.record_timestamp, fc.effective_offset, fc.visible_ts)
            .where(fc.group_id == "g")
            .order_by(fc.log_offset)
        ).all()
    assert [tuple(r) for r in rows] == [
        (5, 1000, 0, 1000),
        (10, 2000, 5, 3000),
        (30, 4000, 6, 4000),
    ]


def test_apply_batch_stores_a_transactional_commit_at_its_marker(catalog: Catalog) -> None:
    source = LogRawSource(max_bytes=200)
    at = _log(source)
    resolver = TxnMomentResolver(source)
    records = [
        ReadRecord(0, at[name], ts, key, value)
        for name, (ts, key, value) in (
            ("plain", _commit("g", 5, 1000)),
            ("txn", _commit("g", 10, 2000)),
            ("other", _commit("h", 1, 2200)),
            ("after", _commit("g", 30, 4000)),
        )
    ]
    markers = resolver.resolve(0, [r.offset for r in records])
    records = [
        ReadRecord(r.partition, r.offset, r.timestamp, r.key, r.value, markers.get(r.offset))
        for r in records
    ]
    apply_batch(catalog, CLUSTER, records, {0: None})
    _check_moments(catalog)


def test_the_follower_loop_stores_a_transactional_commit_at_its_marker(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole loop: the mock cluster delivers the records read_committed would (the plain
    commit, the transactional one, another group's, a later one); the raw reader (a mirror)
    holds them with the transaction's batch, the aborted one and the markers."""
    with EmbeddedKafka(1) as kafka:
        kafka.create_topic(CONSUMER_OFFSETS_TOPIC, 1)
        mirror = mirror_raw_source(monkeypatch, kafka.bootstrap_servers)
        at = _log(mirror)
        delivered = {
            "plain": _commit("g", 5, 1000),
            "txn": _commit("g", 10, 2000),
            "aborted": _commit("g", 20, 2100),
            "other": _commit("h", 1, 2200),
            "abort": (2300, b"x", b"x"),  # markers: place holders, never delivered below
            "commit": (3000, b"x", b"x"),
            "after": _commit("g", 30, 4000),
        }
        producer = Producer({"bootstrap.servers": kafka.bootstrap_servers})
        for name in sorted(at, key=at.__getitem__):
            ts, key, value = delivered[name]
            producer.produce(
                CONSUMER_OFFSETS_TOPIC, key=key, value=value, partition=0, timestamp=ts
            )
        assert producer.flush(30) == 0
        # the mock has no transactions: what read_committed would not deliver is left out
        # by storing only the records read_committed delivers (the loop's filter is the broker)
        skip = {at["aborted"], at["abort"], at["commit"]}
        from kafka_archive.offsets_follower import loop

        real_read = loop.FollowLoop._read

        def read_committed(self: object, msgs: list[object]) -> object:
            records, ends = real_read(self, msgs)  # type: ignore[arg-type]
            return [r for r in records if r.offset not in skip], ends

        monkeypatch.setattr(loop.FollowLoop, "_read", read_committed)
        report = follow_offsets(catalog, CLUSTER, kafka.bootstrap_servers, until_caught_up=True)
    assert report.caught_up
    assert (report.transactional_records, report.unresolved_markers) == (1, 0)
    _check_moments(catalog)


def test_raw_reader_settings_map_and_an_unknown_one_is_named_not_shown() -> None:
    conf = {
        "bootstrap.servers": "b:9093",
        "client.id": "me",
        "security.protocol": "sasl_ssl",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "u",
        "sasl.password": "s3cret-value",
        "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/c.pem",
        "ssl.key.location": "/k.pem",
        "ssl.key.password": "kp",
        "group.id": "ignored",
        "isolation.level": "read_committed",
        "request.timeout.ms": "20000",
    }
    assert kafka_python_config(conf) == {
        "bootstrap_servers": "b:9093",
        "client_id": "me",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "u",
        "sasl_plain_password": "s3cret-value",
        "ssl_cafile": "/ca.pem",
        "ssl_certfile": "/c.pem",
        "ssl_keyfile": "/k.pem",
        "ssl_password": "kp",
        "request_timeout_ms": 20000,
    }
    with pytest.raises(UnsupportedRawSetting) as err:
        kafka_python_config({**conf, "sasl.oauthbearer.client.secret": "s3cret-value"})
    assert "sasl.oauthbearer.client.secret" in str(err.value)
    assert "s3cret-value" not in str(err.value)
    with pytest.raises(UnsupportedRawSetting, match=r"sasl\.mechanism"):
        kafka_python_config({"sasl.mechanism": "GSSAPI"})
    with pytest.raises(UnsupportedRawSetting, match=r"security\.protocol"):
        kafka_python_config({"security.protocol": "carrier-pigeon"})


def test_follow_offsets_refuses_an_unmappable_setting_by_name(tmp_path: Path) -> None:
    """``catalog follow-offsets -X`` with a setting the raw-batch reader cannot apply: one
    error naming the setting (not its value), exit 1, no traceback, no catalog created."""
    db = tmp_path / "new" / "catalog.db"
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "kafka-archive"),
            "catalog",
            "follow-offsets",
            "--cluster",
            "c",
            "--bootstrap",
            "127.0.0.1:1",
            "--db",
            str(db),
            "-X",
            "sasl.oauthbearer.client.secret=s3cret-value",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "sasl.oauthbearer.client.secret" in proc.stderr
    assert "s3cret-value" not in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr
    assert not db.parent.exists()
