"""Sharing a cluster's partitions among fetch archivers (issue 22, point 6): the hand-over
between the group and the fetch loop (``Ownership``), the store's fence (segment claims) and
runs that share, give up and take over partitions, against the fake cluster of
``test_fetch_archiver``. The real group coordinator, two processes and a kill -9:
tests/real_kafka/test_fetch_group_real.py."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.archive.fetch.claims import (
    Fenced,
    claim_key,
    claim_prefix,
    claim_segment,
    follow_claims,
)
from kafka_archive.archive.fetch.group import Ownership
from kafka_archive.archive.fetch.runner import FetchOptions, run_fetch_archive
from kafka_archive.archive.fetch.store_side import resume_point
from kafka_archive.kafka_protocol.fetch import FetchedPartition
from kafka_archive.store import LocalStore
from test_fetch_archiver import TOPIC, DyingStore, FakeCluster, Killed, _log, _manifests, batch
from test_fetch_archiver import _stored_batches as stored

# -- Ownership: the hand-over between the group's callbacks and the fetch loop --------------------


def test_assigned_partitions_are_handed_to_the_fetch_loop_once() -> None:
    own = Ownership()
    assert not own.settled
    own.assign([("t", 0), ("t", 1)])
    assert own.settled and own.owns(("t", 0))
    assert own.changes() == ({("t", 0), ("t", 1)}, set())
    assert own.changes() == (set(), set())
    own.assign([("t", 0), ("t", 2)])  # eager protocols give the whole share again
    assert own.changes() == ({("t", 2)}, set())


def test_an_empty_assignment_settles_the_member() -> None:
    own = Ownership()
    own.assign([])
    assert own.settled and own.changes() == (set(), set())


def test_revoke_waits_until_the_fetch_loop_released_the_partition() -> None:
    own = Ownership()
    own.assign([("t", 0), ("t", 1)])
    own.changes()
    returned = threading.Event()
    result: list[bool] = []

    def revoke() -> None:
        result.append(own.revoke([("t", 0)], timeout_s=60))
        returned.set()

    th = threading.Thread(target=revoke)
    th.start()
    deadline = time.monotonic() + 30
    while own.changes()[1] != {("t", 0)}:  # the loop sees it to give up
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not returned.wait(0.3)  # still writing: the group waits
    assert not own.owns(("t", 0)) and own.owns(("t", 1))
    own.released([("t", 0)])
    assert returned.wait(30) and result == [True]
    th.join()
    assert own.changes() == (set(), set())


def test_revoking_a_partition_never_taken_does_not_wait_and_it_is_never_opened() -> None:
    own = Ownership()
    own.assign([("t", 0)])
    assert own.revoke([("t", 0)], timeout_s=60)
    assert own.changes() == (set(), set())


def test_revoke_gives_up_after_its_timeout_and_on_close() -> None:
    own = Ownership()
    own.assign([("t", 0)])
    own.changes()
    assert own.revoke([("t", 0)], timeout_s=0.05) is False
    own.assign([("t", 1)])
    own.changes()
    done: list[bool] = []
    th = threading.Thread(target=lambda: done.append(own.revoke([("t", 1)], timeout_s=60)))
    th.start()
    time.sleep(0.1)
    own.close()
    th.join(30)
    assert done == [True]


# -- claims: the store's fence ----------------------------------------------------------------


def _opts(**kw: Any) -> FetchOptions:
    return FetchOptions(until_caught_up=True, **kw)


class ZombieStore(LocalStore):
    """At this writer's first claim, ``meanwhile`` runs (another archiver of the partition):
    the writer had resumed from the store before the other one stored anything."""

    def __init__(self, root: Path, meanwhile: Any) -> None:
        super().__init__(root)
        self.meanwhile = meanwhile

    def put_if_absent(self, key: str, source: Any, **kw: Any) -> Any:
        if "/fetch-claims/" in key and self.meanwhile is not None:
            run, self.meanwhile = self.meanwhile, None
            run()
        return super().put_if_absent(key, source, **kw)


def test_two_writers_of_one_partition_leave_one_chain_each_batch_once(tmp_path: Path) -> None:
    cluster = FakeCluster({0: _log(20)})
    store = LocalStore(tmp_path)
    other: list[Any] = []

    def the_other_archiver() -> None:  # other rolls: its segments differ from the zombie's
        other.append(
            run_fetch_archive(
                cluster="c1", source=cluster, store=store,
                options=_opts(segment_overrides={"segment.bytes": 700}),
            )
        )  # fmt: skip

    zombie = run_fetch_archive(
        cluster="c1", source=cluster, store=ZombieStore(tmp_path, the_other_archiver),
        options=_opts(),
    )  # fmt: skip
    assert other[0].ok and other[0].segments > 1
    assert zombie.ok and sum(p.fenced for p in zombie.partitions) == 1
    assert zombie.segments == 0  # every segment it built lost its claim, or was empty
    assert stored(store) == cluster.logs[0]  # each batch once, no hole
    ms = _manifests(store)
    assert [m.base_offset for m in ms[1:]] == [m.end_offset for m in ms[:-1]]
    assert ms[-1].end_offset == cluster.hw(0)


def test_a_claim_by_another_writer_for_other_bytes_fences(tmp_path: Path) -> None:
    cluster = FakeCluster({0: _log(6)})
    store = LocalStore(tmp_path)
    run_fetch_archive(cluster="c1", source=cluster, store=store, options=_opts())
    first = _manifests(store)[0]
    data = store.get_bytes(claim_key("c1", TOPIC, 0, None, first.base_offset))
    claim_segment(store, first, data)  # the same segment again: fine
    other = first.model_copy(update={"end_offset": first.end_offset + 1})
    with pytest.raises(Fenced, match="claimed by another archiver"):
        claim_segment(store, other, other.to_json_bytes())


def test_killed_between_claim_and_manifest_the_next_run_writes_the_manifest(
    tmp_path: Path,
) -> None:
    cluster = FakeCluster({0: _log(20)})
    with pytest.raises(Killed):
        run_fetch_archive(
            cluster="c1", source=cluster, store=DyingStore(tmp_path, 3), options=_opts()
        )
    store = LocalStore(tmp_path)
    ms = _manifests(store)
    claims = [o.key for o in store.list(claim_prefix("c1", TOPIC, 0, None))]
    assert len(ms) == 2 and len(claims) == 3  # the third segment: claimed, no manifest
    resume = resume_point(store, "c1", TOPIC, 0)
    third = _manifests(store)[2]  # written from its claim by the resume
    assert third.base_offset == ms[1].end_offset and resume.offset == third.end_offset
    report = run_fetch_archive(cluster="c1", source=cluster, store=store, options=_opts())
    assert report.ok and stored(store) == cluster.logs[0]


def test_a_pruned_claimed_segment_is_not_brought_back(tmp_path: Path) -> None:
    cluster = FakeCluster({0: _log(10)})
    store = LocalStore(tmp_path)
    run_fetch_archive(cluster="c1", source=cluster, store=store, options=_opts())
    ms = _manifests(store)
    for o in list(store.list("c1/")):  # retention removed every segment and manifest
        if "/fetch-claims/" not in o.key:
            store.delete(o.key)
    last = follow_claims(store, "c1", TOPIC, 0, None, None)
    assert last is not None and last.end_offset == ms[-1].end_offset  # progress kept
    assert _manifests(store) == []


# -- runs sharing partitions ------------------------------------------------------------------


class FakeMembership:
    """A group whose assignments the test makes (``ownership``), from ``initial`` on."""

    def __init__(self, initial: set[tuple[str, int]]) -> None:
        self.ownership = Ownership()
        self.initial = initial
        self.topics: Sequence[str] = ()
        self.closed = False

    def start(self, topics: Sequence[str]) -> None:
        self.topics = topics
        self.ownership.assign(self.initial)

    def close(self) -> None:
        self.ownership.close()
        self.closed = True


class SlowCluster(FakeCluster):
    """A continuous run's long poll: an answer with nothing new waits a little. ``asked``:
    the last offset asked per partition."""

    asked: dict[int, int]

    def fetch(
        self, node: int, asks: Mapping[tuple[str, int], int], *, max_wait_ms: int, **kw: Any
    ) -> list[FetchedPartition]:
        self.asked.update({p: o for (_t, p), o in asks.items()})
        if max_wait_ms and all(o >= self.hw(p) for (_t, p), o in asks.items()):
            time.sleep(0.02)
        return super().fetch(node, asks, max_wait_ms=max_wait_ms, **kw)


def test_members_archive_only_their_share_and_together_everything(tmp_path: Path) -> None:
    cluster = FakeCluster({p: _log(6 + p) for p in range(4)})
    store = LocalStore(tmp_path)
    shares = [{(TOPIC, 0), (TOPIC, 2)}, {(TOPIC, 1), (TOPIC, 3)}]
    for share in shares:
        member = FakeMembership(share)
        report = run_fetch_archive(
            cluster="c1", source=cluster, store=store, options=_opts(group="g"),
            membership=member,
        )  # fmt: skip
        assert report.ok and report.stopped_by == "caught_up" and member.closed
        assert member.topics == [TOPIC]
        assert {(p.topic, p.partition) for p in report.partitions} == share
    for p in range(4):
        assert stored(store, p) == cluster.logs[p]


def test_a_revoked_partition_is_uploaded_and_never_written_again(tmp_path: Path) -> None:
    cluster = SlowCluster({p: _log(4) for p in range(2)})
    cluster.asked = {}
    store = LocalStore(tmp_path)
    member = FakeMembership({(TOPIC, 0), (TOPIC, 1)})
    stop = threading.Event()
    reports: list[Any] = []
    th = threading.Thread(
        target=lambda: reports.append(
            run_fetch_archive(
                cluster="c1", source=cluster, store=store, options=FetchOptions(group="g"),
                stop=stop, membership=member,
            )
        )
    )  # fmt: skip
    th.start()
    try:
        deadline = time.monotonic() + 60
        while cluster.asked.get(1) != cluster.hw(1):  # the loop fetched all of partition 1
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert member.ownership.revoke([(TOPIC, 1)], timeout_s=60)
        # given up: its open segment was uploaded first, so the store has all it fetched
        assert stored(store, 1) == cluster.logs[1]
        before = {m.base_offset for m in _manifests(store, 1)}
        end = cluster.hw(1)
        cluster.logs[1] += [batch(end), batch(end + 2)]
        cluster.logs[0] += [batch(cluster.hw(0))]
        time.sleep(1.0)  # rounds of fetching: partition 0 only
    finally:
        stop.set()  # a clean stop uploads partition 0's open segment
        th.join(60)
    assert reports and reports[0].ok
    assert stored(store, 0) == cluster.logs[0]
    assert {m.base_offset for m in _manifests(store, 1)} == before  # nothing after the revoke
    # the member that takes partition 1 next goes on from the store
    taker = run_fetch_archive(
        cluster="c1", source=cluster, store=store, options=_opts(group="g"),
        membership=FakeMembership({(TOPIC, 1)}),
    )  # fmt: skip
    assert taker.partitions[0].from_offset == end
    assert stored(store, 1) == cluster.logs[1]


def test_a_partition_the_group_gives_later_is_opened_then(tmp_path: Path) -> None:
    cluster = FakeCluster({p: _log(3) for p in range(2)})
    store = LocalStore(tmp_path)
    member = FakeMembership({(TOPIC, 0)})
    original = member.start

    def start(topics: Sequence[str]) -> None:
        original(topics)
        member.ownership.assign([(TOPIC, 1)])  # a rebalance right after joining

    member.start = start  # type: ignore[method-assign]
    report = run_fetch_archive(
        cluster="c1", source=cluster, store=store, options=_opts(group="g"), membership=member
    )
    assert report.ok and {p.partition for p in report.partitions} == {0, 1}
    assert stored(store, 1) == cluster.logs[1]


# -- the command ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--group", " "], "--group: a group name cannot be empty"),
        (["--group", "g", "--session-timeout", "soon"], "--session-timeout"),
        (["--group", "g", "--session-timeout", "10ms"], "between 1s and 1h"),
    ],
)
def test_group_usage_errors_exit_2(tmp_path: Path, extra: list[str], says: str) -> None:
    from test_fetch_archiver import _cli

    out = _cli("--cluster", "c1", "--bootstrap", "h:1", "--store", tmp_path.as_uri(), *extra)
    assert out.exit_code == 2, out.output
    assert says in out.output and "Traceback" not in out.output


def test_group_reaches_the_membership_with_the_client_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_archive.archive.fetch import group as group_module
    from kafka_archive.archive.fetch import source as source_module
    from test_fetch_archiver import _cli

    cluster = FakeCluster({0: _log(4), 1: _log(4)})
    made: list[Any] = []

    class Member(FakeMembership):
        def __init__(self, conf: Mapping[str, Any], group: str, **kw: Any) -> None:
            super().__init__({(TOPIC, 1)})
            made.append((dict(conf), group, kw))

    monkeypatch.setattr(source_module, "KafkaFetchSource", lambda conf, **_kw: cluster)
    monkeypatch.setattr(group_module, "GroupMembership", Member)
    out = _cli(
        "--cluster", "c1", "--bootstrap", "k1:9092", "--store", tmp_path.as_uri(),
        "-X", "security.protocol=SSL", "--group", "archivers", "--session-timeout", "10s",
        "--until-caught-up", "--json",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    conf = {"security.protocol": "SSL", "bootstrap.servers": "k1:9092"}
    assert made == [(conf, "archivers", {"session_timeout_ms": 10_000})]
    store = LocalStore(tmp_path)
    assert stored(store, 1) == cluster.logs[1] and stored(store, 0) == []  # its share only


def test_describe_configs_is_not_asked_when_every_segment_config_is_forced(
    tmp_path: Path,
) -> None:
    class NoDescribeConfigs(FakeCluster):
        def configs(self, topic: str, names: Sequence[str]) -> dict[str, str]:
            raise AssertionError("DescribeConfigs asked")

    cluster = NoDescribeConfigs({0: _log(4)})
    forced = {"segment.bytes": 400, "segment.ms": 60_000, "index.interval.bytes": 100,
              "segment.index.bytes": 4096}  # fmt: skip
    report = run_fetch_archive(
        cluster="c1", source=cluster, store=LocalStore(tmp_path),
        options=_opts(segment_overrides=forced),
    )  # fmt: skip
    assert report.ok and stored(LocalStore(tmp_path)) == cluster.logs[0]


def test_the_group_callbacks_fetch_nothing_through_librdkafka_and_hand_over() -> None:
    """GroupMembership's callbacks: an assignment is kept out of librdkafka's fetcher (an empty
    local assignment) and handed to the fetch loop; a lost session gives the partitions up at
    once (the store's claims cover what is still in flight)."""
    from types import SimpleNamespace

    from kafka_archive.archive.fetch.group import GroupMembership

    calls: list[Any] = []
    consumer = SimpleNamespace(
        assign=lambda tps: calls.append(("assign", tps)),
        unassign=lambda: calls.append(("unassign",)),
    )
    member = GroupMembership({"bootstrap.servers": "k:9092"}, "g", revoke_timeout_s=30)
    tps = [SimpleNamespace(topic=TOPIC, partition=p) for p in (0, 1)]
    member._on_assign(consumer, tps)
    assert calls == [("assign", [])]
    assert member.ownership.changes() == ({(TOPIC, 0), (TOPIC, 1)}, set())
    member._on_lost(consumer, tps[:1])  # returns at once, the loop still to give it up
    assert not member.ownership.owns((TOPIC, 0)) and member.ownership.owns((TOPIC, 1))
    assert member.ownership.changes()[1] == {(TOPIC, 0)}
    member.ownership.released([(TOPIC, 0)])
    member.close()  # never started: nothing to leave
    member._on_revoke(consumer, tps[1:])  # closed: does not wait
    assert calls[-1] == ("unassign",)


def test_a_group_the_principal_may_not_join_stops_the_run_with_one_error(tmp_path: Path) -> None:
    """GROUP_AUTHORIZATION_FAILED (no Read on the group) would leave a member waiting for an
    assignment forever: the run stops with GroupFailed naming the group; a transient error is
    only logged."""
    from kafka_archive.archive.fetch.group import GroupFailed, GroupMembership

    member = GroupMembership({"bootstrap.servers": "k:9092"}, "archivers")
    member.on_error(15, False, "Coordinator not available")  # transient: goes on
    assert member.ownership.error is None
    member.on_error(30, False, "Broker: Group authorization failed")
    fake = FakeMembership(set())
    fake.ownership = member.ownership
    with pytest.raises(GroupFailed, match="group archivers: Broker: Group authorization"):
        run_fetch_archive(
            cluster="c1", source=FakeCluster({0: _log(2)}), store=LocalStore(tmp_path),
            options=_opts(group="archivers"), membership=fake,
        )  # fmt: skip


def test_a_member_follows_its_share_through_a_recreated_topic_and_added_partitions(
    tmp_path: Path,
) -> None:
    """With a group, Metadata still moves the run (fetch-exact's PartitionSet): the owned
    partition's topic re-created mid-run ends the old incarnation and opens the new one (its
    claims under its own topic id), while partitions added meanwhile are left to the group: a
    refresh never opens what is not this member's share."""
    from support.fetch_cluster import FakeCluster as IdCluster
    from support.fetch_cluster import fake_log, manifests

    cluster = IdCluster({0: fake_log(10)}, limit=250)
    cluster.topic_id = "AAAAAAAAAAAAAAAAAAAAAA"
    fresh = fake_log(3)

    def recreate(n: int) -> None:
        if n == 2:
            cluster.topic_id = "BBBBBBBBBBBBBBBBBBBBBA"
            cluster.logs[0] = list(fresh)
            cluster.logs[1] = fake_log(2)  # added: another member's, or this one's later

    cluster.before_fetch = recreate
    store = LocalStore(tmp_path)
    report = run_fetch_archive(
        cluster="c1", source=cluster, store=store,
        options=_opts(group="g", metadata_max_age_s=0),
        membership=FakeMembership({(TOPIC, 0)}),
    )  # fmt: skip
    assert report.ok
    assert [(p.partition, p.topic_id) for p in report.partitions] == [
        (0, "AAAAAAAAAAAAAAAAAAAAAA"),
        (0, "BBBBBBBBBBBBBBBBBBBBBA"),
    ]
    assert manifests(store, 1) == []  # not given by the group: not opened
    news = [m for m in manifests(store) if m.topic_id == "BBBBBBBBBBBBBBBBBBBBBA"]
    assert news[0].base_offset == 0 and news[-1].end_offset == cluster.hw(0)
    claims = store.list(claim_prefix("c1", TOPIC, 0, "BBBBBBBBBBBBBBBBBBBBBA"))
    assert [int(o.key.rsplit("/", 1)[1].split(".")[0]) for o in claims] == [
        m.base_offset for m in news
    ]
