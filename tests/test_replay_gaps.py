"""Completeness is a contract (issue 10): a replay knows every hole of its range before it starts.

Source: two writer-made partitions, archived; one archived ``.log`` object of partition 0 is then
deleted from the store before the catalog build (the catalog records offsets no object serves,
and the object it could not read). The target is librdkafka's mock cluster.

Before: ``replay run`` went around the hole silently (status ``done``, exit 0) and ``--dry-run``
said nothing; a dead target was never contacted by a dry run; two identical runs at once both
reported success.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.archive.runner import run_archive
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.cli import app
from kafka_archive.replay.bookkeeping import models as _models  # noqa: F401
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.planning.catalog_source import CatalogPlanSource
from kafka_archive.replay.planning.plan import ReplaySpec, TargetSpec, build_plan, parse_position
from kafka_archive.replay.runner import execute
from kafka_archive.store import ObjectStore, open_store
from kafka_archive_dev.embedded_kafka import read_to_end
from kafka_archive_dev.writer.broker_writer import BrokerWriter
from support.cli_json import cli
from typer.testing import CliRunner

from tests.support.kafka_mock import MockCluster, committed_records
from tests.support.replay_data import SourcePartition, write_source_topic

CLUSTER = "east"
TOPIC = "orders"
PROGRESS = "__kafka_archive_replay_progress"

pytestmark = pytest.mark.timeout(300)


@dataclass
class Holed:
    parts: dict[int, SourcePartition]
    store: ObjectStore
    store_root: Path
    db_url: str
    catalog: Catalog
    deleted: str


def _open_catalog(url: str) -> Catalog:
    # the catalog is created by its builder (``create`` exists once readers may not create it)
    if "create" in inspect.signature(open_catalog).parameters:
        return open_catalog(url, create=True)
    return open_catalog(url)  # pragma: no cover


@pytest.fixture(scope="module")
def holed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Holed]:
    root = tmp_path_factory.mktemp("replay-gaps")
    broker = BrokerWriter(root / "b1", 1, cluster_id="src-gaps-id", offsets_partitions=1)
    parts = write_source_topic(root, TOPIC, 2, seed=7, broker=broker)
    broker.close()
    store = open_store(str(root / "store"))
    run_archive(
        cluster=CLUSTER, broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store
    )
    logs = sorted(o.key for o in store.list(f"{CLUSTER}/{TOPIC}/0/") if o.key.endswith(".log"))
    assert len(logs) >= 3, logs
    deleted = logs[1]  # a middle segment: offsets on both sides of it are archived
    store.delete(deleted)
    db_url = f"sqlite:///{root / 'catalog.db'}"
    catalog = _open_catalog(db_url)
    build_catalog(catalog, store.uri, cluster=CLUSTER)  # reports the unreadable object
    yield Holed(parts, store, root / "store", db_url, catalog, deleted)
    catalog.close()


@pytest.fixture(scope="module")
def mock() -> Iterator[MockCluster]:
    mc = MockCluster(1)
    mc.create_topic(PROGRESS, 3)
    yield mc
    mc.close()


_counter = [0]


def fresh_topic(mock: MockCluster, partitions: int = 2) -> str:
    _counter[0] += 1
    name = f"gaps-{_counter[0]}"
    mock.create_topic(name, partitions)
    return name


def run_args(h: Holed, target: str, target_topic: str, *extra: str) -> list[str]:
    return [
        "replay", "run", "--cluster", CLUSTER, "--topic", TOPIC, "--from", "earliest",
        "--target", target, "--target-topic", target_topic,
        "--store", h.store.uri, "--db", h.db_url, "--json", *extra,
    ]  # fmt: skip


def _spec(**kw: Any) -> ReplaySpec:
    return ReplaySpec.model_validate(
        {"cluster": CLUSTER, "topic": TOPIC, "from": parse_position("earliest"),
         "target": TargetSpec(bootstrap_servers="unused:9092"), **kw}
    )  # fmt: skip


def _deleted_range(h: Holed) -> tuple[int, int]:
    plan = build_plan(_spec(partitions=[0]), CatalogPlanSource(h.catalog, h.store))
    holes = plan.partition(0).holes
    return min(x.first_offset for x in holes), max(x.last_offset for x in holes)


def test_plan_knows_every_hole(holed: Holed) -> None:
    plan = build_plan(_spec(), CatalogPlanSource(holed.catalog, holed.store))
    assert plan.has_holes and plan.partition(1).holes == []
    holes = plan.partition(0).holes
    assert holes, "the deleted object's offsets are a hole"
    base = int(holed.deleted.rsplit("/", 1)[1].split("-")[0])
    assert min(h.first_offset for h in holes) == base
    # the hole names the object the catalog could not serve, and why
    assert any(h.object_key == holed.deleted for h in holes), holes
    assert all(h.reason for h in holes)
    # a range that avoids the hole has none; an offset bound before the archive is one
    _lo, hi = _deleted_range(holed)
    after = build_plan(
        _spec(partitions=[0], **{"from": parse_position(f"offset:{hi + 1}")}),
        CatalogPlanSource(holed.catalog, holed.store),
    )
    assert not after.has_holes


def test_run_refuses_holes_without_allow_gaps(holed: Holed, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    code, out, text = cli(*run_args(holed, mock.bootstrap_servers, target))
    assert code == 1, text
    err = out[-1]
    assert err["error"] == "ReplayGapsError" and "Traceback" not in text
    lo, _hi = _deleted_range(holed)
    assert f"partition 0 offsets {lo}.." in err["message"] and holed.deleted in err["message"]
    assert "--allow-gaps" in err["hint"]
    assert {h["object_key"] for h in err["holes"]} >= {holed.deleted}
    # nothing was sent
    assert all(not v for v in read_to_end(mock.bootstrap_servers, target, [0, 1]).values())


def test_dry_run_shows_every_hole(holed: Holed, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    code, out, text = cli(*run_args(holed, mock.bootstrap_servers, target, "--dry-run"))
    assert code == 0, text
    plan = out[-1]
    lo, _hi = _deleted_range(holed)
    assert plan["holes"] and {h["partition"] for h in plan["holes"]} == {0}
    assert min(h["first_offset"] for h in plan["holes"]) == lo
    assert any(h["object_key"] == holed.deleted for h in plan["holes"])
    assert plan["partitions"]["0"]["holes"] and plan["partitions"]["1"]["holes"] == []
    human = [
        a for a in run_args(holed, mock.bootstrap_servers, target, "--dry-run") if a != "--json"
    ]
    shown = CliRunner().invoke(app, human, env={"COLUMNS": "250"})
    assert shown.exit_code == 0, shown.stdout
    assert f"p0: offsets {lo}.." in shown.stdout and holed.deleted in shown.stdout


def test_allow_gaps_ends_complete_with_gaps(holed: Holed, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    code, out, text = cli(*run_args(holed, mock.bootstrap_servers, target, "--allow-gaps"))
    assert code == 0, text
    report = out[-1]
    assert report["status"] == "complete-with-gaps" and report["allow_gaps"] is True
    assert report["holes"]
    lo, hi = _deleted_range(holed)
    got = read_to_end(mock.bootstrap_servers, target, [0, 1])
    want0 = [e.value for e in holed.parts[0].expected if not lo <= e.offset <= hi]
    assert [r.value for r in got[0]] == want0
    assert [r.value for r in got[1]] == [e.value for e in holed.parts[1].expected]
    # recorded in the replay's status
    assert ReplayLedger(holed.catalog.engine).run(report["replay_id"]).status == (  # type: ignore[union-attr]
        "complete-with-gaps"
    )
    code, rows, text = cli(
        "replay", "status", "--replay", report["replay_id"], "--db", holed.db_url, "--json"
    )
    assert code == 0, text
    assert rows[-1]["status"] == "complete-with-gaps" and rows[-1]["allow_gaps"] is True
    assert rows[-1]["holes"] == len(report["holes"])
    shown = CliRunner().invoke(
        app, ["replay", "status", "--replay", report["replay_id"], "--db", holed.db_url]
    )
    assert shown.exit_code == 0, shown.stdout
    assert "complete-with-gaps" in shown.stdout and "allowed with --allow-gaps" in shown.stdout


def test_range_without_holes_is_complete(holed: Holed, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    code, out, text = cli(*run_args(holed, mock.bootstrap_servers, target, "--partitions", "1"))
    assert code == 0, text
    assert out[-1]["status"] == "complete" and out[-1]["holes"] == []
    assert ReplayLedger(holed.catalog.engine).run(out[-1]["replay_id"]).status == "complete"  # type: ignore[union-attr]


def test_dry_run_checks_the_target_unless_offline(holed: Holed, mock: MockCluster) -> None:
    args = ["--partitions", "1", "--dry-run"]
    code, out, text = cli(*run_args(holed, "127.0.0.1:1", "t", *args))
    assert code == 1 and out[-1]["error"] == "ReplayTargetError", text
    code, out, text = cli(*run_args(holed, "127.0.0.1:1", "t", *args, "--offline"))
    assert code == 0 and out[-1]["target_check"] is None, text
    code, out, text = cli(*run_args(holed, mock.bootstrap_servers, "no-such-topic", *args))
    assert code == 1 and out[-1]["error"] == "TargetTopicMissingError", text
    target = fresh_topic(mock)
    code, out, text = cli(*run_args(holed, mock.bootstrap_servers, target, *args))
    assert code == 0, text
    assert out[-1]["target_check"]["partitions"] == 2
    code, out, text = cli(*run_args(holed, mock.bootstrap_servers, target, "--offline"))
    assert code == 2 and "--dry-run" in text


def test_object_corrupt_at_read_time_then_repaired(holed: Holed, mock: MockCluster) -> None:
    """Bytes that go bad after the catalog build: the partition stops with an error naming the
    object key and byte position; once the object is repaired the same command resumes and
    the target holds every record exactly once."""
    logs = sorted(
        o.key for o in holed.store.list(f"{CLUSTER}/{TOPIC}/1/") if o.key.endswith(".log")
    )
    victim = logs[len(logs) // 2]
    path = holed.store_root / victim
    good = path.read_bytes()
    bad = bytearray(good)
    middle = len(bad) // 2
    for i in range(middle, min(middle + 64, len(bad))):
        bad[i] ^= 0xFF
    path.write_bytes(bytes(bad))
    target = fresh_topic(mock)
    args = run_args(holed, mock.bootstrap_servers, target, "--partitions", "1")
    try:
        code, out, text = cli(*args)
        assert code == 1, text
        assert f"{victim} at byte {out[-1]['position']}" in out[-1]["message"], out[-1]
        assert out[-1]["position"] > 0 and "Traceback" not in text
        assert "run the same command again" in out[-1]["hint"]
    finally:
        path.write_bytes(good)
    code, out, text = cli(*args)
    assert code == 0, text
    assert out[-1]["status"] == "complete"
    # the committed view (the mock's consumers also show the first run's aborted transaction)
    got = committed_records(mock.bootstrap_servers, target, 1)
    assert [r.value for r in got] == [e.value for e in holed.parts[1].expected]


def test_two_identical_runs_at_once_one_is_refused(holed: Holed, mock: MockCluster) -> None:
    """Guards that hold: while one run of a replay works, an identical ``replay run`` is
    refused (non-zero exit, naming the holder) instead of both reporting success."""
    target = fresh_topic(mock)
    spec = _spec(
        partitions=[1],
        target=TargetSpec(bootstrap_servers=mock.bootstrap_servers),
        target_topic=target,
    )
    plan = build_plan(spec, CatalogPlanSource(holed.catalog, holed.store))
    inside, go_on = threading.Event(), threading.Event()

    def hook(point: str, _info: dict[str, Any]) -> None:
        if point == "after_commit":
            inside.set()
            go_on.wait(60)

    first: list[Any] = []
    worker = threading.Thread(
        target=lambda: first.append(
            execute(plan, store=holed.store, ledger=ReplayLedger(holed.catalog.engine), hook=hook)
        )
    )
    worker.start()
    try:
        assert inside.wait(60)
        code, out, text = cli(*run_args(holed, mock.bootstrap_servers, target, "--partitions", "1"))
        assert code == 1, text
        assert out[-1]["error"] == "ReplayBusyError" and plan.replay_id in out[-1]["message"]
    finally:
        go_on.set()
        worker.join(60)
    assert first and first[0].status == "complete"
    # once the first run is over, the same command finds the replay complete
    code, out, text = cli(*run_args(holed, mock.bootstrap_servers, target, "--partitions", "1"))
    assert code == 0 and out[-1]["status"] == "already-done", text


class _Lines(logging.Handler):
    """Collects a logger's messages (Airflow's logging setup bypasses pytest's caplog)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def test_airflow_tasks_show_every_hole(
    holed: Holed, mock: MockCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The DAG's plan task logs each hole (offsets, object key, reason) and puts them in its XCom
    summary; execute refuses without ``allow_gaps``; with it, the report lists the holes."""
    from kafka_archive.airflow.replay_tasks import execute_task, plan_task, report_task
    from kafka_archive.replay.planning.completeness import ReplayGapsError

    monkeypatch.setenv("KAFKA_ARCHIVE_STORE", holed.store.uri)
    monkeypatch.setenv("KAFKA_ARCHIVE_DB", holed.db_url)
    task_log = logging.getLogger("kafka_archive.airflow.replay_tasks")
    lines = _Lines()
    task_log.addHandler(lines)
    monkeypatch.setattr(task_log, "level", logging.INFO)
    try:
        target = fresh_topic(mock)
        params = {"cluster": CLUSTER, "topic": TOPIC, "from": "earliest",
                  "target": mock.bootstrap_servers, "target_topic": target}  # fmt: skip
        lo, _hi = _deleted_range(holed)
        planned = plan_task(params)
        assert f"partition 0 offsets {lo}.." in lines.text and holed.deleted in lines.text
        assert "refuses to start" in lines.text
        assert any(h["object_key"] == holed.deleted for h in planned["summary"]["holes"])
        with pytest.raises(ReplayGapsError):
            execute_task(planned, params)
        allowed = {**params, "allow_gaps": True}
        planned = plan_task(allowed)
        result = execute_task(planned, allowed)
        assert result["status"] == "complete-with-gaps" and result["holes"]
        stored = ReplayLedger(holed.catalog.engine).plan(result["replay_id"])
        assert stored is not None and stored.spec.allow_gaps  # the choice is recorded
        lines.lines.clear()
        report_task(planned, result)
        assert "complete-with-gaps" in lines.text and "hole replayed around" in lines.text
    finally:
        task_log.removeHandler(lines)


def test_resume_refuses_holes_unless_allowed(holed: Holed, mock: MockCluster) -> None:
    target = fresh_topic(mock)
    spec = _spec(target=TargetSpec(bootstrap_servers=mock.bootstrap_servers), target_topic=target)
    plan = build_plan(spec, CatalogPlanSource(holed.catalog, holed.store))
    ReplayLedger(holed.catalog.engine).register(plan)  # planned (e.g. by the Airflow plan task)
    args = ["replay", "resume", plan.replay_id, "--store", holed.store.uri, "--db", holed.db_url]
    code, out, text = cli(*args, "--json")
    assert code == 1 and out[-1]["error"] == "ReplayGapsError", text
    code, out, text = cli(*args, "--json", "--allow-gaps")
    assert code == 0, text
    assert out[-1]["status"] == "complete-with-gaps" and out[-1]["allow_gaps"] is True
