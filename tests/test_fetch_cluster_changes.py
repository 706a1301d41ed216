"""The fetch archiver while the cluster changes under it (issue 22, point 3), against a fake
cluster (tests/support/fetch_cluster.py): leader changes checked with OffsetsForLeaderEpoch
(a truncated log is never archived twice or with a hole: what is not stored yet is fetched
again, a divergence in what is stored is a named error), a log start moving past the position
mid-run (a named hole), a topic deleted or re-created (a new incarnation, by topic id),
partitions added mid-run, and two archivers of one partition at once. The real cluster:
tests/real_kafka/test_fetch_cluster_changes_real.py."""

from __future__ import annotations

import itertools
import threading
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.archive.fetch.claims import claim_prefix
from kafka_archive.archive.fetch.epochs import LogTruncated, judge_epoch_end
from kafka_archive.archive.fetch.store_side import resume_point
from kafka_archive.archive.manifest import (
    SegmentManifest,
)
from kafka_archive.kafka_protocol.fetch import EpochEnd
from kafka_archive.store import LocalStore
from support.fetch_cluster import TOPIC, FakeCluster, batch, fake_log, manifests, run
from support.fetch_cluster import stored_batches as stored

from segment_lib.log_file import iter_batches

BIG = {"segment.bytes": 1 << 20}  # nothing rolls before the run ends


def epoch_log(epoch: int, start: int, n: int, *, ts: int = 1_000) -> list[bytes]:
    """``n`` batches of 2 records from ``start``, written by a leader of ``epoch``."""
    return [batch(start + 2 * i, ts=ts, partition_leader_epoch=epoch) for i in range(n)]


def contiguous(ms: list[SegmentManifest]) -> bool:
    return all(a.end_offset == b.base_offset for a, b in itertools.pairwise(ms))


# -- the verdict on an OffsetsForLeaderEpoch answer ----------------------------------------------


@pytest.mark.parametrize(
    ("answer", "position", "stored_end", "verdict"),
    [
        (EpochEnd(0, 3, 120), 100, 100, "ok"),  # the epoch goes on past what is held
        (EpochEnd(0, 3, 100), 100, 80, "ok"),  # ends exactly there
        (EpochEnd(0, 2, 150), 100, 80, "ok"),  # an older epoch ending later: Kafka's rule
        (EpochEnd(0, 3, 90), 100, 80, "rewind"),  # truncated inside what is not stored
        (EpochEnd(0, -1, -1), 100, 80, "rewind"),  # no such epoch, something not stored
    ],
)
def test_the_verdict_follows_kafkas_consumer(
    answer: EpochEnd, position: int, stored_end: int, verdict: str
) -> None:
    got = judge_epoch_end(
        "t-0", epoch=3, position=position, stored_end=stored_end, leader=2, answer=answer
    )
    assert got == verdict


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (EpochEnd(0, 3, 90), "offsets 90..99 are archived but not in its log"),
        (EpochEnd(0, -1, -1), "knows no leader epoch at or below 3"),
    ],
)
def test_a_divergence_in_what_is_stored_is_named(answer: EpochEnd, says: str) -> None:
    with pytest.raises(LogTruncated, match=says) as info:
        judge_epoch_end("t-0", epoch=3, position=100, stored_end=100, leader=2, answer=answer)
    assert "t-0" in str(info.value) and "broker 2" in str(info.value)


# -- leader changes --------------------------------------------------------------------------------


def test_a_clean_leader_change_is_checked_and_changes_nothing(tmp_path: Path) -> None:
    """Broker 1 (epoch 0) is replaced by broker 2 (epoch 1) mid-run, its log the same: the
    Fetch to broker 1 is refused, Metadata names broker 2, whose log is checked (it ends
    epoch 0 where epoch 1 starts, past what is held) and the run goes on."""
    cluster = FakeCluster({0: epoch_log(0, 0, 12) + epoch_log(1, 24, 4)}, limit=250)
    cluster.leader_epochs[0] = 0

    def new_leader(n: int) -> None:
        if n == 2:
            cluster.leaders[0], cluster.leader_epochs[0] = 2, 1

    cluster.before_fetch = new_leader
    store = LocalStore(tmp_path)
    report = run(cluster, store, metadata_max_age_s=0)
    assert report.ok and report.partitions[0].rewinds == 0
    assert cluster.epoch_asks == [{0: (1, 0)}]  # (current epoch, the epoch of what is held)
    assert stored(store) == cluster.logs[0]
    epochs = {(e.epoch, e.start_offset) for m in manifests(store) for e in m.leader_epochs}
    assert epochs == {(0, 0), (1, 24)}


def test_an_unclean_leader_change_refetches_what_was_not_stored(tmp_path: Path) -> None:
    """The new leader's log ends epoch 0 at offset 4 and holds other batches after it: the
    batches held past 4 (not stored yet) are dropped, and the archive is the new log, once."""
    cluster = FakeCluster({0: epoch_log(0, 0, 10)}, limit=250)

    def unclean(n: int) -> None:
        if n == 2:
            cluster.leaders[0], cluster.leader_epochs[0] = 2, 1
            cluster.logs[0] = cluster.logs[0][:2] + epoch_log(1, 4, 8, ts=2_000)

    cluster.before_fetch = unclean
    store = LocalStore(tmp_path)
    report = run(cluster, store, metadata_max_age_s=0, segment_overrides=BIG)
    assert report.ok and report.partitions[0].rewinds == 1
    assert stored(store) == cluster.logs[0]
    assert report.holes == []


def test_an_unclean_leader_change_below_the_stored_end_is_a_named_error(tmp_path: Path) -> None:
    """A run resumes after the log was truncated below what is stored (and rewritten): the
    check at the start finds it; that partition stops with LogTruncated naming the offsets;
    nothing is stored for it; the other partition goes on."""
    cluster = FakeCluster({0: epoch_log(0, 0, 10), 1: epoch_log(0, 0, 3)})
    store = LocalStore(tmp_path)
    assert run(cluster, store).ok
    keys = {o.key for o in store.list("c1/orders/0/")}
    cluster.leaders[0], cluster.leader_epochs[0] = 2, 1
    cluster.logs[0] = cluster.logs[0][:5] + epoch_log(1, 10, 12, ts=2_000)
    cluster.logs[1] += epoch_log(0, 6, 2)
    report = run(cluster, store)
    assert not report.ok
    err = report.partitions[0].error or ""
    assert err.startswith("LogTruncated") and "offsets 10..19 are archived but not" in err
    assert {o.key for o in store.list("c1/orders/0/")} == keys
    assert report.partitions[1].error is None and stored(store, 1) == cluster.logs[1]


def test_a_resumed_run_checks_each_leader_once(tmp_path: Path) -> None:
    cluster = FakeCluster({0: epoch_log(4, 0, 6), 1: epoch_log(4, 0, 6)})
    cluster.leader_epochs = {0: 4, 1: 4}
    store = LocalStore(tmp_path)
    run(cluster, store)
    assert cluster.epoch_asks == []  # nothing archived: nothing to check
    report = run(cluster, store)
    assert report.ok and report.segments == 0
    assert cluster.epoch_asks == [{0: (4, 4), 1: (4, 4)}]  # one request for the leader


# -- the log start, topics, partitions -------------------------------------------------------------


def test_retention_passing_the_position_mid_run_is_a_named_hole(tmp_path: Path) -> None:
    cluster = FakeCluster({0: fake_log(10)}, limit=250)
    seen: list[int] = []

    def retention(n: int) -> None:
        if n == 2:
            seen.append(cluster.hw(0))
            cluster.logs[0] = [batch(40), batch(42)]
            cluster.log_start[0] = 40

    cluster.before_fetch = retention
    store = LocalStore(tmp_path)
    report = run(cluster, store)
    assert report.ok and len(report.holes) == 1
    (hole,) = report.holes
    assert hole.end == 40 and hole.start < seen[0]
    ms = manifests(store)
    before = [m for m in ms if m.end_offset <= hole.start]
    after = [m for m in ms if m.base_offset >= 40]
    assert before and before[-1].end_offset == hole.start and contiguous(before)
    assert after[0].fetch is not None and after[0].fetch.hole_from == hole.start
    assert stored(store)[-2:] == [batch(40), batch(42)]


def test_a_topic_recreated_between_runs_is_a_new_incarnation(tmp_path: Path) -> None:
    cluster = FakeCluster({0: fake_log(10)})
    cluster.topic_id = "AAAAAAAAAAAAAAAAAAAAAA"
    store = LocalStore(tmp_path)
    run(cluster, store)
    old_end = cluster.hw(0)
    cluster.topic_id = "BBBBBBBBBBBBBBBBBBBBBA"
    cluster.logs[0] = epoch_log(0, 0, 3, ts=5_000)  # offsets from 0 again, other records
    report = run(cluster, store)
    assert report.ok and report.holes == [] and report.partitions[0].from_offset == 0
    by_id = {
        tid: sorted((m for m in manifests(store) if m.topic_id == tid), key=lambda m: m.base_offset)
        for tid in (cluster.topic_id, "AAAAAAAAAAAAAAAAAAAAAA")
    }
    assert by_id["AAAAAAAAAAAAAAAAAAAAAA"][-1].end_offset == old_end  # untouched
    new = by_id[cluster.topic_id]
    assert new[0].base_offset == 0 and new[-1].end_offset == 6 and contiguous(new)
    assert resume_point(store, "c1", TOPIC, 0, cluster.topic_id).offset == 6
    assert resume_point(store, "c1", TOPIC, 0, "AAAAAAAAAAAAAAAAAAAAAA").offset == old_end
    for tid, ms in by_id.items():  # each incarnation's claims under its own topic id: the new
        # one's base 0 is not fenced by the old one's
        claims = store.list(claim_prefix("c1", TOPIC, 0, tid))
        assert [int(o.key.rsplit("/", 1)[1].split(".")[0]) for o in claims] == [
            m.base_offset for m in ms
        ]
    assert run(cluster, store).segments == 0  # resumed from its own incarnation


def test_a_topic_recreated_mid_run_ends_one_incarnation_and_starts_the_next(
    tmp_path: Path,
) -> None:
    """Fetched by topic id: the old id is answered UNKNOWN_TOPIC_ID, Metadata shows the new
    id: what the old incarnation's partition held is stored under its id, the new one is
    archived from 0 under its own."""
    old = fake_log(10)
    cluster = FakeCluster({0: list(old)}, limit=250)
    cluster.topic_id = "AAAAAAAAAAAAAAAAAAAAAA"
    fresh = epoch_log(0, 0, 5, ts=9_000)

    def recreate(n: int) -> None:
        if n == 2:
            cluster.topic_id = "BBBBBBBBBBBBBBBBBBBBBA"
            cluster.logs[0] = list(fresh)

    cluster.before_fetch = recreate
    store = LocalStore(tmp_path)
    report = run(cluster, store, metadata_max_age_s=3600)
    assert report.ok
    first, second = report.partitions
    assert (first.topic_id, second.topic_id) == ("AAAAAAAAAAAAAAAAAAAAAA", cluster.topic_id)
    assert first.ended is not None and "re-created" in first.ended and second.ended is None
    ms = manifests(store)
    olds = [m for m in ms if m.topic_id == "AAAAAAAAAAAAAAAAAAAAAA"]
    news = [m for m in ms if m.topic_id == cluster.topic_id]
    assert contiguous(olds) and olds[-1].end_offset == first.to_offset > 0
    held = [b for m in olds for b in _batches(store, m)]
    assert held == old[: len(held)]
    assert [b for m in news for b in _batches(store, m)] == fresh


def test_a_deleted_topic_ends_its_partitions(tmp_path: Path) -> None:
    cluster = FakeCluster({0: fake_log(10)}, limit=250)
    cluster.topic_id = "AAAAAAAAAAAAAAAAAAAAAA"

    def delete(n: int) -> None:
        cluster.deleted = cluster.deleted or n == 2

    cluster.before_fetch = delete
    store = LocalStore(tmp_path)
    report = run(cluster, store)
    assert report.ok and report.partitions[0].ended == "the topic was deleted"
    assert report.stopped_by == "caught_up"
    assert manifests(store)[-1].end_offset == report.partitions[0].to_offset > 0


def test_partitions_added_mid_run_join_it(tmp_path: Path) -> None:
    cluster = FakeCluster({0: fake_log(10)}, limit=250)

    def add(n: int) -> None:
        if n == 1:
            cluster.logs[1] = fake_log(4)
            cluster.logs[2] = fake_log(2)

    cluster.before_fetch = add
    store = LocalStore(tmp_path)
    report = run(cluster, store, metadata_max_age_s=0)
    assert report.ok and sorted(p.partition for p in report.partitions) == [0, 1, 2]
    for p in (0, 1, 2):
        assert stored(store, p) == cluster.logs[p]


# -- two archivers of one partition ----------------------------------------------------------------


def _batches(store: LocalStore, m: SegmentManifest) -> list[bytes]:
    data = store.get_bytes(m.log_file.key)
    return [data[h.position : h.next_position] for h in iter_batches(data)]


@pytest.mark.parametrize("other_stops_early", [False, True], ids=["other-whole", "other-stops"])
def test_another_archiver_storing_first_is_followed_not_doubled(
    tmp_path: Path, other_stops_early: bool
) -> None:
    """Archiver B runs (whole, or stopping early: its last segment rolled where it stopped)
    while A is between two Fetches; A's next upload sees B's segments and A goes on from the
    store's end: every batch is stored once, the segments follow each other."""
    cluster = FakeCluster({0: fake_log(30)}, limit=250)
    store = LocalStore(tmp_path)
    reports: list[Any] = []

    def other_archiver(n: int) -> None:
        if n == 3:
            cluster.before_fetch = None
            stop = threading.Event()
            if other_stops_early:
                fetches = cluster.fetches

                def stop_soon(k: int) -> None:
                    if k >= fetches + 2:
                        stop.set()

                cluster.before_fetch = stop_soon
            from kafka_archive.archive.fetch.runner import FetchOptions, run_fetch_archive

            reports.append(
                run_fetch_archive(
                    cluster="c1",
                    source=cluster,
                    store=store,
                    options=FetchOptions(until_caught_up=True),
                    stop=stop,
                )
            )
            cluster.before_fetch = None

    cluster.before_fetch = other_archiver
    a = run(cluster, store)
    (b,) = reports
    assert a.ok and b.ok and a.partitions[0].yielded == 1
    ms = manifests(store)
    assert contiguous(ms) and ms[0].base_offset == 0 and ms[-1].end_offset == cluster.hw(0)
    assert stored(store) == cluster.logs[0]
    assert a.segments + b.segments == len(ms)


@pytest.mark.parametrize("other_rolls", [None, 700], ids=["same-rolls", "other-rolls"])
def test_two_archivers_uploading_at_once_leave_one_chain_by_their_claims(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other_rolls: int | None
) -> None:
    """The race the check before an upload cannot see (both pass it, both upload at once): the
    check is made blind here, so only the claims keep the partition one chain. The other
    archiver (same segment rolls, or other ones) stores first; this one's segments claimed
    for other bytes are fenced (nothing of them stored) and it goes on from the store's end:
    one manifest and one claim per base, contiguous, every batch stored once, the broker's
    bytes."""
    from kafka_archive.archive.fetch import partition as partition_module
    from kafka_archive.archive.fetch.runner import FetchOptions, run_fetch_archive

    monkeypatch.setattr(partition_module, "fetched_from", lambda *a, **kw: None)
    cluster = FakeCluster({0: fake_log(30)}, limit=250)
    store = LocalStore(tmp_path)
    reports: list[Any] = []
    rolls = {} if other_rolls is None else {"segment.bytes": other_rolls}

    def other_archiver(n: int) -> None:
        if n == 3:
            cluster.before_fetch = None
            opts = FetchOptions(until_caught_up=True, segment_overrides=rolls)
            reports.append(
                run_fetch_archive(cluster="c1", source=cluster, store=store, options=opts)
            )

    cluster.before_fetch = other_archiver
    a = run(cluster, store)
    (b,) = reports
    assert a.ok and b.ok and a.partitions[0].yielded == 0
    # the same rolls: the same segments, stored once whoever claims first; other rolls: fenced
    assert (a.partitions[0].fenced > 0) == (other_rolls is not None)
    ms = manifests(store)
    assert contiguous(ms) and ms[0].base_offset == 0 and ms[-1].end_offset == cluster.hw(0)
    assert len({m.base_offset for m in ms}) == len(ms)
    topic_id = ms[0].topic_id
    claims = sorted(o.key for o in store.list(claim_prefix("c1", TOPIC, 0, topic_id)))
    assert [int(k.rsplit("/", 1)[1].split(".")[0]) for k in claims] == [m.base_offset for m in ms]
    assert stored(store) == cluster.logs[0]  # each batch once, the broker's bytes
    assert resume_point(store, "c1", TOPIC, 0, topic_id).offset == cluster.hw(0)


def test_a_retriable_error_is_asked_again_not_a_failure(tmp_path: Path) -> None:
    """KAFKA_STORAGE_ERROR (56) and OFFSET_NOT_AVAILABLE (78), as a leader moving can answer,
    in Fetch and OffsetsForLeaderEpoch: Metadata and the leader are asked again."""
    from kafka_archive.kafka_protocol.fetch import FetchedPartition

    class Flaky(FakeCluster):
        def fetch(self, node: int, asks: Any, **kw: Any) -> list[FetchedPartition]:
            if self.fetches in (1, 2):
                self.fetches += 1
                return [FetchedPartition(t, p, 56, -1, -1, -1, b"") for t, p in asks]
            return super().fetch(node, asks, **kw)

        def epoch_ends(self, node: int, topic: str, asks: Any) -> dict[int, EpochEnd]:
            if len(self.epoch_asks) < 2:
                self.epoch_asks.append(dict(asks))
                return {p: EpochEnd(78, -1, -1) for p in asks}
            return super().epoch_ends(node, topic, asks)

    cluster = Flaky({0: epoch_log(3, 0, 8)}, limit=250)
    store = LocalStore(tmp_path)
    run(cluster, store)
    cluster.logs[0] += epoch_log(3, 16, 3)
    report = run(cluster, store)
    assert report.ok and len(cluster.epoch_asks) >= 3  # two refused, then answered
    assert stored(store) == cluster.logs[0]
