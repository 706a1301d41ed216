"""The restore service over a real catalog, without a target (``check_target=False``, as
``restore plan --offline``): topics planned as replays up to T, groups found by their commits,
a moment before the data, and the restore record (status, resume with secrets given again)."""

from __future__ import annotations

import pytest
from kafka_archive.replay.errors import ReplayConfigError
from kafka_archive.replay.planning.plan import TargetSpec
from kafka_archive.restore.request import RenameMap, RestoreRequest
from kafka_archive.services.restore import RestoreService
from kafka_archive.settings import load_settings
from support.catalog_data import GROUPS, START_MS, History, archived_catalog

C = "c1"
T = START_MS + 3_600_000


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str, str]:
    hist, store, db = archived_catalog(tmp_path_factory.mktemp("restore-svc"), cluster=C)
    return hist, store, db


def _service(archive: tuple[History, str, str]) -> RestoreService:
    _hist, store, db = archive
    return RestoreService(load_settings({"store": store, "db": db}, env={}))


def _request(**over: object) -> RestoreRequest:
    base: dict[str, object] = {
        "cluster": C,
        "all_topics": True,
        "at_ms": T,
        "rename": RenameMap(suffix="-dr"),
        "target": TargetSpec(bootstrap_servers="dr:9093", config={"sasl.password": "pw"}),
    }
    return RestoreRequest.model_validate({**base, **over})


def test_an_offline_plan_replays_each_topic_up_to_t(archive: tuple[History, str, str]) -> None:
    with _service(archive) as svc:
        plan = svc.plan(_request(), check_target=False)
        # the same topics as `catalog topics`, every one a replay to T into its renamed target
        assert {t.source: t.target for t in plan.topics} == {
            "events": "events-dr",
            "orders": "orders-dr",
        }
        orders = next(t for t in plan.topics if t.source == "orders")
        assert orders.replay_id and orders.records > 0 and not orders.resumed
        assert plan.ok and plan.estimate["bytes"] == sum(t.bytes for t in plan.topics)
        assert {g.group for g in plan.groups} <= {*GROUPS, "exactly-once"}
        assert plan.groups and all(g.topics == ["orders"] for g in plan.groups)
        assert any("not asked" in n for n in plan.notes)
        # before every archived record (ListOffsets: none at or before T): nothing to restore
        early = svc.plan(_request(at_ms=1), check_target=False)
        assert all(t.empty for t in early.topics)
        assert {p.code for p in early.problems} == {"nothing_before_t"}


def test_the_restore_record_status_and_resume(archive: tuple[History, str, str]) -> None:
    request = _request(topics=["orders"], all_topics=False)
    rid = request.restore_id()
    with _service(archive) as svc:
        svc.ledger.register(
            rid, cluster=C, target="dr:9093", at_ms=T, request_json=request.to_json()
        )
        svc.ledger.set_replays(rid, {"orders": "r-unknown"})
        svc.ledger.set_status(rid, "running")
        (row,) = svc.status(rid)
        # running, but no live run holds any of its replays: it was killed
        assert row["status"] == "interrupted"
        assert row["resume"] == f"kafka-archive restore resume {rid}"
        assert row["topics"] == {"orders": {"replay_id": "r-unknown", "status": "planned"}}
        # the catalog never stores the secret: resuming needs it again
        with pytest.raises(ReplayConfigError, match="secret"):
            svc.stored_request(None)
        again = svc.stored_request(None, target_config={"sasl.password": "pw"})
        assert again.restore_id() == rid and again.target.config["sasl.password"] == "pw"
        with pytest.raises(ReplayConfigError, match="no restore"):
            svc.status("restore-nope")
