"""The fetch archiver (``kafka_archive.archive.fetch``) against a fake cluster: what of a Fetch
answer is stored, resuming from the store's manifests, a run killed midway, and a hole where
the broker's log start moved past the archive. The real broker: tests/real_kafka/
test_fetch_archiver_real.py."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.archive.fetch.batches import FetchDiverged, usable_batches
from kafka_archive.archive.fetch.report import Hole
from kafka_archive.archive.fetch.runner import FetchOptions, run_fetch_archive
from kafka_archive.archive.fetch.store_side import resume_point
from kafka_archive.kafka_protocol.fetch import ClusterTopics, FetchedPartition, TopicInfo
from kafka_archive.store import LocalStore
from support.fetch_cluster import TOPIC, FakeCluster, abort, batch, txn
from support.fetch_cluster import fake_log as _log
from support.fetch_cluster import manifests as _manifests
from support.fetch_cluster import run as _run
from support.fetch_cluster import stored_batches as _stored_batches

# -- what of an answer is kept -------------------------------------------------------------------


def test_a_trailing_partial_batch_is_left_for_the_next_fetch() -> None:
    data = batch(0) + batch(2) + batch(4)[:30]
    u = usable_batches(data, 0, 100)
    assert (u.batch_count, u.next_offset, u.partial_tail) == (2, 4, True)
    assert data[u.start : u.end] == batch(0) + batch(2)


def test_batches_before_the_asked_offset_are_skipped() -> None:
    data = batch(0) + batch(2) + batch(4)
    u = usable_batches(data, 4, 100)
    assert (u.skipped_before, u.batch_count, u.next_offset) == (2, 1, 6)
    assert data[u.start : u.end] == batch(4)


def test_a_batch_across_the_resume_point_is_never_stored_twice() -> None:
    data = batch(0, 4)  # offsets 0..3; the archive holds up to 1
    with pytest.raises(FetchDiverged, match="resume point 2"):
        usable_batches(data, 2, 100, archived_end=2)
    # nothing archived yet (the log starts inside the batch): the whole batch is kept
    u = usable_batches(data, 2, 100, archived_end=None)
    assert (u.batch_count, u.next_offset) == (1, 4)


def test_nothing_at_or_above_the_high_watermark() -> None:
    u = usable_batches(batch(0) + batch(2), 0, 3)
    assert (u.batch_count, u.next_offset, u.above_high_watermark) == (1, 2, 1)


# -- a fake cluster ------------------------------------------------------------------------------


def test_a_run_stores_every_batch_once_below_the_high_watermark(tmp_path: Path) -> None:
    cluster = FakeCluster({0: _log(20), 1: _log(3)})
    store = LocalStore(tmp_path)
    report = _run(cluster, store)
    assert report.ok and report.stopped_by == "caught_up" and not report.holes
    for p in (0, 1):
        assert _stored_batches(store, p) == cluster.logs[p]
        ms = _manifests(store, p)
        assert all(m.origin == "fetch" for m in ms)
        assert ms[-1].end_offset == cluster.hw(p)
        assert [m.base_offset for m in ms[1:]] == [m.end_offset for m in ms[:-1]]
    assert len(_manifests(store, 0)) > 3  # segment.bytes 400: rolled
    aborted = [m for m in _manifests(store, 0) if m.file("txnindex") is not None]
    assert len(aborted) == 1


def test_a_rerun_resumes_from_the_store_and_adds_only_new_batches(tmp_path: Path) -> None:
    cluster = FakeCluster({0: _log(10)})
    store = LocalStore(tmp_path)
    _run(cluster, store)
    keys = {o.key for o in store.list("c1/")}
    end = cluster.hw(0)
    assert resume_point(store, "c1", TOPIC, 0).offset == end
    again = _run(cluster, store)
    assert again.segments == 0 and {o.key for o in store.list("c1/")} == keys
    cluster.logs[0] += [batch(end), batch(end + 2)]
    third = _run(cluster, store)
    assert third.partitions[0].from_offset == end
    assert _stored_batches(store) == cluster.logs[0]


def test_an_open_transaction_is_carried_across_runs_into_the_txnindex(tmp_path: Path) -> None:
    cluster = FakeCluster({0: [batch(0), txn(2, 9), batch(4)]})
    store = LocalStore(tmp_path)
    _run(cluster, store)
    assert resume_point(store, "c1", TOPIC, 0).open_transactions == {9: 2}
    cluster.logs[0].append(abort(6, 9))
    _run(cluster, store)
    last = _manifests(store)[-1]
    txn_file = last.file("txnindex")
    assert txn_file is not None  # the abort's range starts in the previous run's segment
    from segment_lib.txn_index import parse_txn_index

    (entry,) = parse_txn_index(store.get_bytes(txn_file.key), last.base_offset).entries
    assert (entry.producer_id, entry.first_offset, entry.last_offset) == (9, 2, 6)


class Killed(BaseException):
    """kill -9: nothing after it runs."""


class DyingStore(LocalStore):
    """Dies at the ``n``-th manifest write (its segment's files are already stored)."""

    def __init__(self, root: Path, n: int) -> None:
        super().__init__(root)
        self.left = n

    def put_if_absent(self, key: str, source: Any, **kw: Any) -> Any:
        if "/manifests/" in key:
            self.left -= 1
            if self.left <= 0:
                raise Killed
        return super().put_if_absent(key, source, **kw)


def test_killed_midway_then_rerun_loses_and_doubles_nothing(tmp_path: Path) -> None:
    cluster = FakeCluster({0: _log(20)})
    with pytest.raises(Killed):
        _run(cluster, DyingStore(tmp_path, 3))
    store = LocalStore(tmp_path)
    assert len(_manifests(store)) == 2
    report = _run(cluster, store)
    assert report.ok
    assert _stored_batches(store) == cluster.logs[0]


def test_a_log_start_past_the_resume_point_is_a_named_hole(tmp_path: Path) -> None:
    cluster = FakeCluster({0: _log(5)})
    store = LocalStore(tmp_path)
    _run(cluster, store)
    end = cluster.hw(0)
    # retention deletes everything archived and the next 4 offsets before the next run
    cluster.logs[0] = [batch(end + 4), batch(end + 6)]
    cluster.log_start[0] = end + 4
    report = _run(cluster, store)
    assert report.holes == [Hole(TOPIC, 0, end, end + 4)]
    after = [m for m in _manifests(store) if m.base_offset >= end]
    assert after[0].base_offset == end + 4
    assert after[0].fetch is not None and after[0].fetch.hole_from == end
    assert _stored_batches(store)[-2:] == cluster.logs[0]


class MovingCluster(FakeCluster):
    """Retention runs between the run's ListOffsets and its first Fetch."""

    def __init__(self, logs: Mapping[int, list[bytes]], *, to: int, keep: list[bytes]):
        super().__init__(logs)
        self.to, self.keep = to, keep

    def fetch(
        self, node: int, asks: Mapping[tuple[str, int], int], **kw: Any
    ) -> list[FetchedPartition]:
        if self.fetches == 0:
            self.logs[0], self.log_start[0] = self.keep, self.to
        return super().fetch(node, asks, **kw)


def test_a_new_partition_starts_where_the_log_starts_without_a_hole(tmp_path: Path) -> None:
    # the log start moves into a batch: the first batch is kept whole (offsets 5..6)
    keep = [batch(5), batch(7)]
    cluster = MovingCluster({0: [batch(0), batch(2), batch(4)]}, to=6, keep=keep)
    store = LocalStore(tmp_path)
    report = _run(cluster, store)
    assert report.ok and report.holes == []
    assert report.partitions[0].from_offset == 6
    assert _stored_batches(store) == keep


def test_a_log_ending_below_the_archive_stops_that_partition_only(tmp_path: Path) -> None:
    cluster = FakeCluster({0: _log(5), 1: _log(5)})
    store = LocalStore(tmp_path)
    _run(cluster, store)
    cluster.logs[0] = [batch(0)]  # truncated below the archive (or recreated)
    cluster.logs[1].append(batch(cluster.hw(1)))
    report = _run(cluster, store)
    assert not report.ok
    assert "ends below the archive" in (report.partitions[0].error or "")
    assert report.partitions[1].error is None and report.partitions[1].segments == 1


# -- the command ---------------------------------------------------------------------------------


def _cli(*args: str) -> Any:
    from kafka_archive.cli import _register_groups, app
    from typer.testing import CliRunner

    _register_groups()
    return CliRunner().invoke(app, ["archive", "fetch", *args])


def test_help_teaches_with_examples() -> None:
    out = _cli("--help")
    assert out.exit_code == 0
    assert "--until-caught-up" in out.output and "Examples" in out.output


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["-X", "segment.bytes=lots"], "segment.bytes must be a positive integer"),
        (["-X", "nonsense"], "is not NAME=VALUE"),
        (["--duration", "forever"], "--duration"),
        (["--store-option", "sse"], "is not NAME=VALUE"),
    ],
)
def test_usage_errors_exit_2_without_traceback(tmp_path: Path, extra: list[str], says: str) -> None:
    out = _cli("--cluster", "c1", "--bootstrap", "h:1", "--store", tmp_path.as_uri(), *extra)
    assert out.exit_code == 2, out.output
    assert says in out.output and "Traceback" not in out.output


def test_the_command_runs_the_service_and_reports_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from kafka_archive.archive.fetch import source as source_module

    cluster = FakeCluster({0: _log(6)})
    seen: dict[str, Any] = {}

    def fake(conf: Mapping[str, Any], **_kw: Any) -> FakeCluster:
        seen.update(conf)
        return cluster

    monkeypatch.setattr(source_module, "KafkaFetchSource", fake)
    out = _cli(
        "--cluster", "c1", "--bootstrap", "k1:9092", "--store", tmp_path.as_uri(),
        "-X", "security.protocol=SSL", "-X", "segment.bytes=300", "--until-caught-up", "--json",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    report = json.loads(next(ln for ln in out.output.splitlines() if ln.startswith("{")))
    assert report["ok"] and report["segments"] == len(report["partitions"][0]["manifests"])
    assert seen == {"security.protocol": "SSL", "bootstrap.servers": "k1:9092"}
    assert _stored_batches(LocalStore(tmp_path)) == cluster.logs[0]


def test_manifests_without_origin_read_as_disk_and_fetch_fields_round_trip(tmp_path: Path) -> None:
    from kafka_archive.archive.manifest import parse_manifest

    cluster = FakeCluster({0: _log(3)})
    store = LocalStore(tmp_path)
    _run(cluster, store)
    m = _manifests(store)[-1]
    assert parse_manifest(m.to_json_bytes()) == m
    raw = m.model_dump(mode="json")
    del raw["origin"], raw["fetch"]  # as written before the fields existed
    import json

    old = parse_manifest(json.dumps(raw).encode())
    assert old.origin == "disk" and old.fetch is None


class DeadLeader(FakeCluster):
    """Partition 0's leader never answers; partition 1's does."""

    def topics(self) -> ClusterTopics:
        leaders = {0: 2, 1: 1}
        return ClusterTopics("kc", {TOPIC: TopicInfo(TOPIC, None, False, leaders)})

    def fetch(
        self, node: int, asks: Mapping[tuple[str, int], int], **kw: Any
    ) -> list[FetchedPartition]:
        from kafka_archive.kafka_protocol.client import ProtocolConnectionError

        if node == 2:
            raise ProtocolConnectionError("broker 2 is not reachable")
        return super().fetch(node, asks, **kw)


def test_until_caught_up_gives_up_on_a_dead_leader_naming_it(tmp_path: Path) -> None:
    cluster = DeadLeader({0: _log(3), 1: _log(3)})
    store = LocalStore(tmp_path)
    report = run_fetch_archive(
        cluster="c1",
        source=cluster,
        store=store,
        options=FetchOptions(until_caught_up=True, stall_s=0.5),
    )
    assert not report.ok
    assert "no Fetch answer from its leader" in (report.partitions[0].error or "")
    assert report.partitions[1].error is None
    assert _stored_batches(store, 1) == cluster.logs[1]


def test_a_hole_ending_inside_a_batch_keeps_that_batch_whole(tmp_path: Path) -> None:
    cluster = FakeCluster({0: _log(5)})
    store = LocalStore(tmp_path)
    _run(cluster, store)
    end = cluster.hw(0)
    # DeleteRecords to end + 5: the log starts inside the batch end + 4 .. end + 5
    cluster.logs[0] = [batch(end + 4), batch(end + 6)]
    cluster.log_start[0] = end + 5
    report = _run(cluster, store)
    assert report.ok and report.holes == [Hole(TOPIC, 0, end, end + 5)]
    assert _stored_batches(store)[-2:] == cluster.logs[0]


@pytest.mark.parametrize(
    ("patterns", "chosen"),
    [
        ((), {"orders-eu", "orders-us", "payments"}),
        (("orders-*",), {"orders-eu", "orders-us"}),
        (("orders-eu", "pay*"), {"orders-eu", "payments"}),
        (("ORDERS-*",), set()),  # case-sensitive, as archive --topics
        (("*",), {"orders-eu", "orders-us", "payments"}),  # a wildcard never takes internals
        (("*", "__consumer_offsets"), {"orders-eu", "orders-us", "payments", "__consumer_offsets"}),
    ],
)
def test_topics_are_globs_and_internal_topics_only_by_name(
    patterns: tuple[str, ...], chosen: set[str]
) -> None:
    """``archive fetch --topics`` selects as ``archive --topics`` does (shell-style globs on the
    whole name), except that an internal topic is taken only when named exactly."""
    from kafka_archive.archive.fetch.members import selected
    from kafka_archive.archive.topic_selection import TopicSelection
    from kafka_archive.kafka_protocol.fetch import TopicInfo

    topics = [
        TopicInfo(n, None, n.startswith("__"), {0: 1})
        for n in ("orders-eu", "orders-us", "payments", "__consumer_offsets", "__transaction_state")
    ]
    selection = TopicSelection(patterns)
    assert {t.name for t in topics if selected(t, selection)} == chosen


def test_store_options_reach_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--store-option`` is ``archive``'s: parsed the same way and handed to the store."""
    from kafka_archive.archive.fetch import source as source_module
    from kafka_archive.services.archive import ArchiveService

    monkeypatch.setattr(
        source_module, "KafkaFetchSource", lambda conf, **kw: FakeCluster({0: _log(2)})
    )
    opened: list[dict[str, Any]] = []
    real = ArchiveService.open_store

    def spy(self: ArchiveService, **options: Any) -> Any:
        opened.append(options)
        return real(self)

    monkeypatch.setattr(ArchiveService, "open_store", spy)
    out = _cli(
        "--cluster", "c1", "--bootstrap", "k1:9092", "--store", tmp_path.as_uri(),
        "--store-option", "sse=aws:kms", "--store-option", "multipart-chunksize=67108864",
        "--until-caught-up",
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert opened == [{"sse": "aws:kms", "multipart_chunksize": 67108864}]
