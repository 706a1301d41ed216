"""The health view and the metrics (kafka_archive.metrics, services.status, `kafka-archive
status`, `kafka-archive metrics serve`, the API's /status and /metrics): each rule judged on
hand-made facts, the facts read from a real catalog checked against the catalog's own rows, and
the exposition scraped over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.metrics.cluster import ClusterEnds, ClusterTarget, cluster_ends
from kafka_archive.metrics.collector import archive_lag, families, replay_eta_s
from kafka_archive.metrics.definitions import METRICS, names
from kafka_archive.metrics.exposition import catalog_registry
from kafka_archive.metrics.snapshot import (
    ActiveReplay,
    BrokerArchive,
    BuildRuns,
    FollowerPartition,
    PartitionArchive,
    PruneState,
    Snapshot,
    read_snapshot,
)
from kafka_archive.services.status import Thresholds, judge
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text
from support.catalog_data import archived_catalog
from support.prometheus import free_port

C = "c1"
NOW = 1_800_000_000_000
H = 3_600_000


def _levels(snap: Snapshot, answers: list[ClusterEnds] | None = None) -> dict[tuple[str, str], str]:
    return {(c.area, c.subject): c.level for c in judge(snap, answers or []).checks}


def _healthy() -> Snapshot:
    return Snapshot(
        now_ms=NOW,
        partitions=[PartitionArchive(C, "t", 0, 100, NOW - 60_000, NOW - 60_000)],
        brokers=[BrokerArchive(C, "1", NOW - 60_000, 3)],
        builds=BuildRuns({"ok": 2}, NOW - 120_000, 0, "", 0),
    )


# -- rules ------------------------------------------------------------------------------


def test_a_healthy_snapshot_needs_no_human() -> None:
    rep = judge(_healthy(), [ClusterEnds(C, {("t", 0): 100})])
    assert rep.level == "ok" and not rep.needs_human
    assert rep.lag == [{"cluster": C, "topic": "t", "partitions": 1, "lag_offsets": 0,
                        "lag_seconds": 0.0, "worst_partition": 0}]  # fmt: skip


def test_a_broker_that_stopped_archiving_fails_and_the_fetcher_is_named() -> None:
    snap = _healthy()
    snap.brokers = [BrokerArchive(C, "1", NOW - 7 * H, 3), BrokerArchive(C, "", NOW - 60_000, 1)]
    levels = _levels(snap)
    assert levels[("archive", f"{C} broker 1")] == "fail"
    assert levels[("archive", f"{C} fetcher")] == "ok"


def test_lag_fails_only_past_the_threshold_and_needs_the_cluster() -> None:
    snap = _healthy()
    snap.partitions = [PartitionArchive(C, "t", 0, 100, NOW - 2 * H, NOW - 60_000)]
    assert ("lag", f"{C}/t") not in _levels(snap)  # no cluster asked: no lag judged
    assert _levels(snap, [ClusterEnds(C, {("t", 0): 150})])[("lag", f"{C}/t")] == "fail"
    assert ("lag", f"{C}/t") not in _levels(snap, [ClusterEnds(C, {("t", 0): 100})])
    unreachable = _levels(snap, [ClusterEnds(C, {}, "connection refused")])
    assert unreachable[("cluster", C)] == "warn"


def test_archive_lag_definition() -> None:
    assert archive_lag(100, 100, NOW - H, NOW) == (0, 0.0)
    assert archive_lag(100, 130, NOW - H, NOW) == (30, 3600.0)
    assert archive_lag(-1, 5, -1, NOW) == (5, 0.0)  # nothing archived yet
    assert replay_eta_s(100, 300, NOW - 10_000, NOW) == 30.0
    assert replay_eta_s(0, 300, NOW - 10_000, NOW) is None


def test_catalog_never_built_failing_and_stale() -> None:
    snap = _healthy()
    snap.builds = BuildRuns({}, 0, 0, "", 0)
    assert _levels(snap)[("catalog", "build")] == "fail"
    snap.builds = BuildRuns({"ok": 1, "failed": 1}, NOW - 60_000, NOW - 30_000, "boom", 0)
    assert _levels(snap)[("catalog", "build")] == "fail"
    snap.builds = BuildRuns({"ok": 1}, NOW - 7 * H, 0, "", 0)
    assert _levels(snap)[("catalog", "freshness")] == "fail"


def test_follower_stopped_vs_catching_up_vs_idle() -> None:
    snap = _healthy()
    snap.follower = [FollowerPartition(C, 0, 10, NOW - H), FollowerPartition(C, 1, 5, NOW - H)]
    behind = [ClusterEnds(C, {("__consumer_offsets", 0): 50_000, ("__consumer_offsets", 1): 5})]
    rep = judge(snap, behind)
    assert {(c.area, c.level) for c in rep.checks if c.area == "follower"} == {("follower", "fail")}
    assert rep.follower[0]["lag_offsets"] == 49_990 and rep.follower[0]["end"] == 50_005
    idle = [ClusterEnds(C, {("__consumer_offsets", 0): 10, ("__consumer_offsets", 1): 5})]
    assert _levels(snap, idle)[("follower", C)] == "ok"
    assert _levels(snap)[("follower", C)] == "warn"  # no cluster asked: cannot tell
    snap.follower = [FollowerPartition(C, 0, 10, NOW - 1000)]
    assert _levels(snap, behind)[("follower", C)] == "ok"  # storing: catching up


def test_integrity_prune_and_replay_rules() -> None:
    snap = _healthy()
    snap.integrity = {"corrupt": 2}
    snap.prunes = [PruneState(C, 4, 1, NOW - H, NOW - 2 * H, 10), PruneState("c2", 1, 1, 0, NOW, 0)]
    snap.active_replays = [
        ActiveReplay("r-stuck", C, "t", "running", NOW - 3 * H, NOW - H, 10, 5, 2, 1),
        ActiveReplay("r-busy", C, "t", "running", NOW - 10_000, NOW - 1000, 100, 300, 2, 0),
    ]
    rep = judge(snap)
    levels = {(c.area, c.subject): c.level for c in rep.checks}
    assert levels[("integrity", "objects")] == "fail"
    assert levels[("prune", C)] == "fail" and ("prune", "c2") not in levels
    assert levels[("replay", "r-stuck")] == "fail" and ("replay", "r-busy") not in levels
    assert rep.checks[0].level == "fail"  # worst first
    busy = next(r for r in rep.replays if r["replay_id"] == "r-busy")
    assert busy["eta_s"] == 30.0


def test_thresholds_move_the_line() -> None:
    snap = _healthy()
    snap.brokers = [BrokerArchive(C, "1", NOW - 2 * H, 3)]
    assert not judge(snap).needs_human
    assert judge(snap, thresholds=Thresholds(archive_max_age_s=3600)).needs_human


# -- metric families ----------------------------------------------------------------------


def _samples(fams: list[Any]) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in fams for s in f.samples}


def test_families_use_only_defined_names_and_labels() -> None:
    snap = _healthy()
    snap.follower = [FollowerPartition(C, 0, 10, NOW - H)]
    snap.active_replays = [ActiveReplay("r1", C, "t", "running", NOW - 10_000, NOW, 10, 5, 2, 1)]
    snap.prunes = [PruneState(C, 1, 1, NOW, NOW, 5)]
    snap.coverage = {(C, "t", "missing"): 1}
    answers = [ClusterEnds(C, {("t", 0): 130, ("__consumer_offsets", 0): 12})]
    defs = {d.name: d for d in METRICS}
    fams = families(snap, answers)
    for fam in fams:
        for s in fam.samples:
            if s.name.endswith("_created"):
                continue
            assert s.name in defs, s.name
            assert set(s.labels) == set(defs[s.name].labels), s.name
    got = _samples(fams)
    key = (("cluster", C), ("partition", "0"), ("topic", "t"))
    assert got[("kafka_archive_partition_lag_offsets", key)] == 30
    assert got[("kafka_archive_partition_lag_seconds", key)] == 60.0
    assert got[("kafka_archive_follower_lag_offsets", (("cluster", C),))] == 2
    assert got[("kafka_archive_replay_records_sent_total",
                (("cluster", C), ("replay_id", "r1"), ("topic", "t")))] == 10  # fmt: skip


# -- a real catalog ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    _hist, store, db = archived_catalog(tmp_path_factory.mktemp("status"), cluster=C)
    return store, db


def test_snapshot_agrees_with_the_catalogs_rows(archive: tuple[str, str]) -> None:
    _store, db = archive
    with open_catalog(db) as cat:
        snap = read_snapshot(cat)
        with cat.engine.connect() as conn:
            seg = conn.execute(
                text(
                    "SELECT p.topic, COUNT(*), SUM(s.size_bytes), MAX(s.archived_at_ms) FROM "
                    "segments s JOIN partitions p ON p.id = s.partition_id GROUP BY p.topic"
                )
            ).all()
            ends = dict(
                conn.execute(
                    text(
                        "SELECT p.topic || '-' || p.partition, MAX(s.last_offset) + 1 FROM "
                        "segments s JOIN partitions p ON p.id = s.partition_id "
                        "WHERE s.status IN ('canonical', 'partial') GROUP BY p.id"
                    )
                ).all()
            )
    assert {(t.topic, t.segments, t.bytes) for t in snap.topics} == {
        (r[0], r[1], r[2]) for r in seg
    }
    assert [(b.cluster, b.broker) for b in snap.brokers] == [(C, "1")]
    assert snap.brokers[0].last_archived_ms == max(r[3] for r in seg)
    for p in snap.partitions:
        # an end offset is at least one past the last offset (a segment's end may be later)
        assert p.end_offset >= ends[f"{p.topic}-{p.partition}"]
    assert snap.builds.by_status == {"ok": 1} and snap.builds.last_success_ms > 0
    assert snap.integrity == {} and snap.active_replays == []


def _insert_problems(cat: Catalog) -> None:
    with cat.engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO integrity_problems (kind, subject_key, reason, detected_by, "
                "first_seen_ms, last_seen_ms) VALUES ('corrupt', 'k/x', 'crc', 'build', 1, 1)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO replay_runs (replay_id, cluster, topic, target, target_topic, "
                "partition_mapping, status, plan_json, created_at_ms, updated_at_ms) VALUES "
                "('r-1', :c, 'orders', 'tgt', 'orders', 'same', 'running', '{}', 1000, 2000)"
            ),
            {"c": C},
        )
        conn.execute(
            text(
                "INSERT INTO replay_progress (replay_id, source_partition, next_offset, "
                "end_offset, txn_seq, records_sent, first_offset, last_offset, aborted_records, "
                "control_batches, filtered_records, open_txn_records, done, "
                "progress_partition, progress_offset, updated_at_ms) VALUES "
                "('r-1', 0, 40, 100, 1, 40, 0, 39, 0, 0, 0, 0, false, 0, 0, 3000)"
            )
        )


@pytest.fixture
def troubled(archive: tuple[str, str], tmp_path: Path) -> str:
    import shutil

    db = str(tmp_path / "troubled.db")
    shutil.copy(archive[1], db)
    with open_catalog(db) as cat:
        _insert_problems(cat)
    return db


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).parent / "kafka-archive"
    return subprocess.run([str(exe), *args], capture_output=True, text=True, check=False)


def test_status_cli_exit_code_says_whether_a_human_is_needed(
    archive: tuple[str, str], troubled: str
) -> None:
    ok = _cli("status", "--db", archive[1])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "healthy" in ok.stdout and "Traceback" not in ok.stderr
    bad = _cli("status", "--db", troubled, "--json")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    body = json.loads(bad.stdout)
    assert body["kind"] == "status" and body["needs_human"] is True
    assert body["integrity"] == {"corrupt": 1}
    [replay] = body["replays"]
    assert replay["replay_id"] == "r-1" and replay["records_sent"] == 40
    assert replay["offsets_remaining"] == 60
    assert {("integrity", "fail"), ("replay", "fail")} <= {
        (c["area"], c["level"]) for c in body["checks"]
    }


def test_status_cli_bad_input_is_a_clean_error(tmp_path: Path, archive: tuple[str, str]) -> None:
    missing = _cli("status", "--db", str(tmp_path / "nope.db"))
    assert missing.returncode == 1 and "error:" in missing.stderr and "hint:" in missing.stderr
    usage = _cli("status", "--db", archive[1], "--cluster", "no-equals-sign")
    assert usage.returncode == 2 and "NAME=HOST:PORT" in usage.stderr
    dur = _cli("status", "--db", archive[1], "--lag-max", "soon")
    assert dur.returncode == 2 and "duration" in dur.stderr
    for p in (missing, usage, dur):
        assert "Traceback" not in p.stderr


def test_an_unreachable_catalog_is_catalog_up_0_not_a_failed_scrape(tmp_path: Path) -> None:
    def broken() -> Catalog:
        raise OSError("database is gone")

    text_ = generate_latest(catalog_registry(broken)).decode()
    assert "kafka_archive_catalog_up 0.0" in text_


def test_an_unreachable_cluster_is_an_answer_with_an_error() -> None:
    port = free_port()  # nothing listens there
    answer = cluster_ends(
        ClusterTarget(C, f"127.0.0.1:{port}", {"socket.connection.setup.timeout.ms": "1000"}),
        [("t", 0)],
        timeout_s=2.0,
    )
    assert answer.error and not answer.ends


def _scrape(url: str) -> dict[str, list[Any]]:
    with urllib.request.urlopen(url, timeout=10) as resp:
        body = resp.read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(body)}


def test_metrics_serve_exposes_the_catalog_over_http(troubled: str) -> None:
    port = free_port()
    exe = Path(sys.executable).parent / "kafka-archive"
    proc = subprocess.Popen(
        [
            str(exe),
            "metrics",
            "serve",
            "--db",
            troubled,
            "--port",
            str(port),
            "--addr",
            "127.0.0.1",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                fams = _scrape(f"http://127.0.0.1:{port}/metrics")
                break
            except OSError:
                assert proc.poll() is None, proc.communicate()
                assert time.monotonic() < deadline
                time.sleep(0.2)
        assert fams["kafka_archive_catalog_up"][0].value == 1
        problems = {s.labels["kind"]: s.value for s in fams["kafka_archive_integrity_problems"]}
        assert problems["corrupt"] == 1 and problems["missing"] == 0
        exposed = {s.name for samples in fams.values() for s in samples}
        assert exposed <= names() | {"kafka_archive_replay_records_sent_created"}
        assert "kafka_archive_replay_offsets_remaining" in exposed
        # the port is taken now: a second server says so cleanly
        second = _cli(
            "metrics", "serve", "--db", troubled, "--port", str(port), "--addr", "127.0.0.1"
        )
        assert second.returncode == 1 and "hint:" in second.stderr, second.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_textfile_path_writes_the_same_exposition_atomically(
    archive: tuple[str, str], tmp_path: Path
) -> None:
    from kafka_archive.metrics.exposition import write_textfile

    registry = catalog_registry(lambda: open_catalog(archive[1]))
    out = tmp_path / "kafka_archive.prom"
    write_textfile(registry, out)
    fams = {f.name: f for f in text_string_to_metric_families(out.read_text())}
    assert fams["kafka_archive_catalog_up"].samples[0].value == 1
    assert [p.name for p in tmp_path.iterdir()] == ["kafka_archive.prom"]  # no temp file left
