"""A transaction still open where the archive ends (issue 20, point 2).

Source: one partition written by the project's segment writer. The first archive holds plain
records, then producer 7's transaction (never resolved in it), then more plain records and
producer 8's committed transaction; the second archive (the same broker later) also holds
producer 7's COMMIT (or ABORT) marker and a few records after it.

A ``read_committed`` consumer of the source stops at producer 7's first offset (the last stable
offset) until the marker is written. So must a replay and an export: the first run delivers
only what lies below it and ends ``incomplete`` (naming the partition, the producer and its
first offset); the same command run again after the marker is archived delivers exactly the
rest - committed records, not aborted ones, nothing twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.archive.runner import run_archive
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.models import PartitionStability
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.store import ObjectStore, open_store
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.writer.broker_writer import BrokerWriter
from kafka_archive_dev.writer.deterministic import new_topic_id
from kafka_archive_dev.writer.encode import WriteRecord
from support.cli_json import cli

from segment_lib.txn_state import BEGIN, END, TxnFold, scan_txn_events
from tests.support.kafka_mock import MockCluster, committed_records

CLUSTER = "east"
TOPIC = "payments"
PROGRESS = "__kafka_archive_replay_progress"
OPEN_PID, OTHER_PID = 7, 8
#: offsets: 0..9 plain, 10..12 producer 7 (open), 13..17 plain, 18..19 producer 8, 20 its
#: COMMIT; later: 21 producer 7's marker, 22..23 plain
LSO, FIRST_END = 10, 21

pytest_plugins = ["support.spark"]
pytestmark = pytest.mark.timeout(600)


def _recs(tag: str, n: int) -> list[WriteRecord]:
    return [WriteRecord(f"{tag}-k{i}".encode(), f"{tag}-{i}".encode(), (), 1_700_000_000_000 + i)
            for i in range(n)]  # fmt: skip


def write_broker(root: Path, outcome: str | None) -> BrokerWriter:
    """The broker's log as it is at the first archive (``outcome=None``) or later (producer
    7's transaction ended with ``commit`` or ``abort``); the same bytes up to offset 20."""
    broker = BrokerWriter(root, 1, cluster_id="open-txn-cluster")
    pw = broker.partition(TOPIC, 0, topic_id=new_topic_id(TOPIC))
    pw.append(_recs("plain-a", 10))
    pw.append(_recs("open", 3), producer_id=OPEN_PID, transactional=True)
    pw.append(_recs("plain-b", 5))
    pw.append(_recs("other", 2), producer_id=OTHER_PID, transactional=True)
    pw.commit(OTHER_PID)
    pw.roll()
    if outcome is not None:
        (pw.commit if outcome == "commit" else pw.abort)(OPEN_PID)
        pw.append(_recs("plain-c", 2))
        pw.roll()
    broker.close()
    return broker


def values(outcome: str | None) -> list[bytes]:
    """What a read_committed consumer of the source sees, offsets below ``FIRST_END``."""
    first = [f"plain-a-{i}".encode() for i in range(10)]
    if outcome is None:
        return first
    held = [f"open-{i}".encode() for i in range(3)] if outcome == "commit" else []
    return (first + held + [f"plain-b-{i}".encode() for i in range(5)]
            + [f"other-{i}".encode() for i in range(2)])  # fmt: skip


@dataclass
class Archive:
    root: Path
    store: ObjectStore
    db_url: str
    catalog: Catalog

    def archive(self, outcome: str | None) -> None:
        broker = write_broker(self.root / f"broker-{outcome}", outcome)
        run_archive(
            cluster=CLUSTER, broker_id=1, log_dirs=[str(d) for d in broker.log_dirs],
            store=self.store,
        )  # fmt: skip
        build_catalog(self.catalog, self.store.uri, cluster=CLUSTER)


@pytest.fixture
def archive(tmp_path: Path) -> Iterator[Archive]:
    store = open_store(str(tmp_path / "store"))
    db_url = f"sqlite:///{tmp_path / 'catalog.db'}"
    catalog = open_catalog(db_url, create=True)
    a = Archive(tmp_path, store, db_url, catalog)
    a.archive(None)
    yield a
    catalog.close()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    mc = MockCluster(1)
    mc.create_topic(PROGRESS, 2)
    yield mc
    mc.close()


# -- bytes and catalog ----------------------------------------------------------------------


def test_txn_events_and_fold_give_the_last_stable_offset(tmp_path: Path) -> None:
    broker = write_broker(tmp_path / "b", None)
    log = sorted((broker.log_dirs[0] / f"{TOPIC}-0").glob("*.log"))[0]
    events = scan_txn_events(log.read_bytes())
    assert [tuple(e) for e in events] == [(10, OPEN_PID, BEGIN), (18, OTHER_PID, BEGIN),
                                          (20, OTHER_PID, END)]  # fmt: skip
    fold = TxnFold()
    fold.add(events)
    assert fold.stable_offset(FIRST_END) == LSO
    assert fold.open_transactions() == [(OPEN_PID, LSO)]
    fold.add([(21, OPEN_PID, END)])
    assert fold.stable_offset(24) == 24


def test_events_read_in_small_chunks_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build reads a segment's events with ranged reads (a batch cut by a chunk's end is
    read again with the next chunk; one larger than a chunk is read whole)."""
    from kafka_archive.catalog import stability

    broker = write_broker(tmp_path / "b", "commit")
    store = open_store(str(tmp_path / "store"))
    logs = sorted((broker.log_dirs[0] / f"{TOPIC}-0").glob("*.log"))
    monkeypatch.setattr(stability, "_CHUNK_BYTES", 100)  # smaller than any batch here
    for log in logs:
        data = log.read_bytes()
        store.put_bytes(log.name, data)
        assert stability._scan_object(store, log.name, len(data)) == scan_txn_events(data)


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_catalog_records_the_stable_offset(archive: Archive, outcome: str) -> None:
    with archive.catalog.session() as s:
        (row,) = s.query(PartitionStability).all()
        assert (row.stable_offset, row.end_offset, row.open_txns) == (
            LSO,
            FIRST_END,
            f"[[{OPEN_PID}, {LSO}]]",
        )
    archive.archive(outcome)
    with archive.catalog.session() as s:
        (row,) = s.query(PartitionStability).all()
        assert (row.stable_offset, row.end_offset, row.open_txns) == (24, 24, "[]")


# -- replay ---------------------------------------------------------------------------------


def replay_args(a: Archive, mock: MockCluster, target: str) -> list[str]:
    return [
        "replay", "run", "--cluster", CLUSTER, "--topic", TOPIC, "--from", "earliest",
        "--to", f"offset:{FIRST_END}", "--target", mock.bootstrap_servers,
        "--target-topic", target, "--store", a.store.uri, "--db", a.db_url, "--json",
    ]  # fmt: skip


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_replay_stops_at_the_open_transaction_and_a_rerun_delivers_the_rest(
    archive: Archive, mock: MockCluster, outcome: str
) -> None:
    target = f"replayed-{outcome}"
    mock.create_topic(target, 1)
    code, out, text = cli(*replay_args(archive, mock, target))
    assert code == 1, text
    first = out[-1]
    assert first["status"] == "incomplete"
    (row,) = first["incomplete"]
    assert (row["partition"], row["stable_offset"], row["end_offset"]) == (0, LSO, FIRST_END)
    assert row["open_txns"] == [[OPEN_PID, LSO]]
    assert f"producer {OPEN_PID} from offset {LSO}" in row["message"]
    assert "archive the partition again" in first["hint"].lower()
    # nothing at or above the stable offset was delivered
    got = [r.value for r in committed_records(mock.bootstrap_servers, target, 0)]
    assert got == values(None)
    ledger = ReplayLedger(archive.catalog.engine)
    run = ledger.run(first["replay_id"])
    assert run is not None and run.status == "incomplete"

    # again before the outcome is archived: still incomplete, nothing sent, never "already-done"
    code, out, text = cli(*replay_args(archive, mock, target))
    assert code == 1 and out[-1]["status"] == "incomplete", text
    assert out[-1]["records_sent_this_run"] == 0

    archive.archive(outcome)
    code, out, text = cli(*replay_args(archive, mock, target))
    assert code == 0, text
    again = out[-1]
    assert again["replay_id"] == first["replay_id"]
    assert again["status"] == "complete" and not again["incomplete"]
    assert again["partitions"]["0"]["resumed_from"] == LSO
    got = [r.value for r in read_to_end(mock.bootstrap_servers, target, [0])[0]]
    assert got == values(outcome)  # exactly the rest, nothing twice
    assert [r.value for r in committed_records(mock.bootstrap_servers, target, 0)] == got
    code, out, text = cli(*replay_args(archive, mock, target))
    assert code == 0 and out[-1]["status"] == "already-done", text


def test_replay_waits_for_the_outcome_when_asked(
    archive: Archive, mock: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--wait-for-open-transactions: the catalog is looked at again until the archive holds the
    marker (here it is archived while the command waits), then everything is delivered."""
    from kafka_archive.replay.planning import stability

    target = "replayed-wait"
    mock.create_topic(target, 1)
    waited: list[float] = []

    def archive_while_waiting(seconds: float) -> None:
        waited.append(seconds)
        archive.archive("commit")

    monkeypatch.setattr(stability, "pause", archive_while_waiting)
    code, out, text = cli(*replay_args(archive, mock, target), "--wait-for-open-transactions", "60")
    assert code == 0, text
    assert len(waited) == 1 and out[-1]["status"] == "complete"
    got = [r.value for r in read_to_end(mock.bootstrap_servers, target, [0])[0]]
    assert got == values("commit")


# -- export ---------------------------------------------------------------------------------


def exported_values(out: Path) -> list[bytes]:
    """The exported rows' values in offset order, read as a Hive-style directory reader does
    (only the files the manifest lists are left in the output)."""
    import pyarrow.dataset as ds

    part = ds.partitioning(flavor="hive")
    table = ds.dataset(str(out), format="parquet", partitioning=part).to_table()
    rows = sorted(zip(table.column("offset").to_pylist(), table.column("value").to_pylist(),
                      strict=True))  # fmt: skip
    offsets = [o for o, _v in rows]
    assert len(offsets) == len(set(offsets))  # nothing twice
    return [v for _o, v in rows]


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_export_is_committed_incomplete_and_a_rerun_completes_it(
    archive: Archive, spark: Any, outcome: str
) -> None:
    from kafka_archive.export.manifest import open_export_stores, read_manifest
    from kafka_archive.services.export import ExportRequest, ExportService
    from kafka_archive.settings import load_settings

    out = archive.root / "export"
    request = ExportRequest.model_validate(
        {"cluster": CLUSTER, "topic": TOPIC, "from": "earliest", "to": f"offset:{FIRST_END}",
         "output": str(out)}
    )  # fmt: skip

    def run() -> Any:
        settings = load_settings({"store": archive.store.uri, "db": archive.db_url}, env={})
        with ExportService(settings) as svc:
            plan = svc.plan(request)
            return plan.export_id, svc.run(plan, spark=spark)

    export_id, first = run()
    assert first.status == "incomplete"
    (row,) = first.incomplete
    assert (row["partition"], row["stable_offset"], row["open_txns"]) == (0, LSO, [[OPEN_PID, LSO]])
    assert first.hint and "archive the partition again" in first.hint.lower()
    manifest = read_manifest(open_export_stores(str(out))[1])
    assert (
        manifest is not None and not manifest.complete and manifest.incomplete == first.incomplete
    )
    assert exported_values(out) == values(None)  # nothing at or above the stable offset

    # not served stale: run again before the outcome is archived, still incomplete
    again_id, again = run()
    assert (again_id, again.status) == (export_id, "incomplete")

    archive.archive(outcome)
    done_id, done = run()
    assert (done_id, done.status, done.incomplete) == (export_id, "committed", [])
    manifest = read_manifest(open_export_stores(str(out))[1])
    assert manifest is not None and manifest.complete
    assert exported_values(out) == values(outcome)
    assert run()[1].status == "already-committed"


def test_a_catalog_that_never_read_the_markers_refuses_to_guess(
    archive: Archive, mock: MockCluster
) -> None:
    """A catalog migrated from before the last stable offsets were recorded (events NULL, no
    row): planning refuses with a hint instead of guessing; the next build fills them in."""
    from kafka_archive.catalog.models import Segment
    from sqlalchemy import delete, update

    with archive.catalog.session() as s, s.begin():
        s.execute(update(Segment).values(txn_events=None))
        s.execute(delete(PartitionStability))
    args = [*replay_args(archive, mock, "never-written"), "--dry-run", "--offline"]
    code, out, text = cli(*args)
    assert code == 1, text
    assert "transaction markers were not read yet" in out[-1]["message"]
    assert "catalog build" in out[-1]["hint"]
    build_catalog(archive.catalog, archive.store.uri, cluster=CLUSTER)
    code, out, text = cli(*args)
    assert code == 0, text
    assert [r["stable_offset"] for r in out[-1]["incomplete"]] == [LSO]


def test_airflow_report_tasks_fail_an_incomplete_run_with_the_reason() -> None:
    from kafka_archive.airflow import export_tasks
    from kafka_archive.replay.planning.stability import INCOMPLETE_HINT, IncompleteRunError

    row = {"partition": 0, "stable_offset": LSO, "end_offset": FIRST_END,
           "open_txns": [[OPEN_PID, LSO]], "message": f"p0: producer {OPEN_PID} ..."}  # fmt: skip
    result = {
        "export_id": "e-1", "status": "incomplete", "rows": 10, "files": 1, "bytes_written": 1,
        "duration_s": 1.0, "rows_per_s": 10.0, "aborted_records": 0, "control_batches": 1,
        "open_txn_records": 0, "output": "file:///o", "manifest": "_m", "incomplete": [row],
        "hint": INCOMPLETE_HINT,
    }  # fmt: skip
    with pytest.raises(IncompleteRunError) as caught:
        export_tasks.report_task({"export_id": "e-1"}, result)
    assert "export e-1 is incomplete" in caught.value.message
    assert f"producer {OPEN_PID}" in caught.value.message
    assert caught.value.hint == INCOMPLETE_HINT
    assert export_tasks.report_task({"export_id": "e-1"}, {**result, "status": "committed"})


@pytest.mark.parametrize("outcome", ["commit", "abort"])
def test_the_runbook_form_resumes_an_incomplete_replay_with_what_was_archived_since(
    archive: Archive, mock: MockCluster, outcome: str
) -> None:
    """``--from earliest`` and no ``--to``: the archive's end moves when the marker is
    archived, so the same command plans a new range; it resumes the incomplete replay (read
    again from the archive as it is now), then a follow-on replay sends what came after."""
    target = f"runbook-{outcome}"
    mock.create_topic(target, 1)
    args = [a for a in replay_args(archive, mock, target) if a != f"offset:{FIRST_END}"]
    args.remove("--to")
    code, out, text = cli(*args)
    assert code == 1 and out[-1]["status"] == "incomplete", text
    first = out[-1]["replay_id"]

    archive.archive(outcome)  # the marker, then plain-c-0..1 (offsets 22..23)
    code, out, text = cli(*args)
    assert code == 0, text
    resumed = out[-1]
    assert resumed["replay_id"] == first and resumed["status"] == "complete", text
    assert [r.value for r in read_to_end(mock.bootstrap_servers, target, [0])[0]] == values(outcome)
    code, out, text = cli(*args)  # what was archived after the first replay's end
    assert code == 0 and out[-1]["replay_id"] != first, text
    got = [r.value for r in read_to_end(mock.bootstrap_servers, target, [0])[0]]
    assert got == [*values(outcome), b"plain-c-0", b"plain-c-1"]  # each record once
    code, out, text = cli(*args)
    assert code == 0 and out[-1]["status"] == "already-done", text
