"""The on-call API's restore routes (kafka_archive.ui.restore_routes): the plan is the service's
preflight (``restore plan --json``), launching triggers the restore DAG with Params its own
schema accepts, secrets are refused, and each needs the restore DAG's trigger permission."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from kafka_archive.airflow.restore_tasks import PARAMS_SCHEMA
from kafka_archive.ui.models import RestoreRequestBody
from support.catalog_data import History, archived_catalog
from test_api import API, OP, SECRET, VIEWER, make_app
from ui_fakes import Conn, RecordingLauncher

C = "c1"
T = "2030-01-01T00:00:00Z"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str, str]:
    return archived_catalog(tmp_path_factory.mktemp("ui-restore"), cluster=C)


@pytest.fixture
def launcher() -> RecordingLauncher:
    return RecordingLauncher(
        connections={"target_kafka": Conn("localhost", 19092, login="u", password=SECRET)}
    )


@pytest.fixture
def client(archive: tuple[History, str, str], launcher: RecordingLauncher) -> TestClient:
    return TestClient(make_app(archive, launcher))


def _body(**over: Any) -> dict[str, Any]:
    return {"cluster": C, "all_topics": True, "at": T, "target": "target_kafka", **over}


def test_the_request_model_is_the_dags_params() -> None:
    fields = {f.alias or name: f for name, f in RestoreRequestBody.model_fields.items()}
    assert set(fields) == set(PARAMS_SCHEMA) - {"spark_master"}
    for name, field in fields.items():
        if not field.is_required():
            assert field.get_default(call_default_factory=True) == PARAMS_SCHEMA[name][0], name


def test_the_plan_is_the_services_preflight(client: TestClient) -> None:
    got = client.post(
        f"{API}/restore/plan?check_target=false", headers=OP, json=_body(prefix="dr.")
    )
    assert got.status_code == 200, got.text
    plan = got.json()
    assert plan["kind"] == "restore_plan" and plan["ok"], plan["problems"]
    topics = {t["target"]: t for t in plan["topics"]}
    assert set(topics) == {"dr.events", "dr.orders"}
    assert topics["dr.orders"]["records"] > 0 and plan["estimate"]["bytes"] > 0
    assert plan["groups"], "the groups that committed on orders by T"
    assert SECRET not in got.text
    # a pattern that selects nothing is a problem of the plan, not an HTTP error
    bad = client.post(
        f"{API}/restore/plan?check_target=false",
        headers=OP,
        json=_body(all_topics=False, topics=["nope*"]),
    )
    assert bad.status_code == 200 and not bad.json()["ok"]
    assert [p["code"] for p in bad.json()["problems"]] == ["nothing_selected"]


def test_launch_secrets_and_permissions(client: TestClient, launcher: RecordingLauncher) -> None:
    assert client.post(f"{API}/restore/plan", headers=VIEWER, json=_body()).status_code == 403
    assert client.post(f"{API}/restore/launch", headers=VIEWER, json=_body()).status_code == 403
    secret = _body(target_config={"sasl.password": SECRET})
    got = client.post(f"{API}/restore/launch", headers=OP, json=secret)
    assert got.status_code == 422 and SECRET not in got.text
    bad = client.post(f"{API}/restore/launch", headers=OP, json=_body(at="whenever"))
    assert bad.status_code == 400, bad.text
    assert launcher.triggered == []
    ok = client.post(f"{API}/restore/launch", headers=OP, json=_body(acls=True))
    assert ok.status_code == 201, ok.text
    ((conf, user),) = launcher.triggered
    assert user == "oncall" and conf["acls"] and conf["at"] == T
    run_id = ok.json()["run_id"]
    launcher.results[run_id] = ("plan", {"restore_id": "restore-x"})
    state = client.get(f"{API}/restore/runs/{run_id}", headers=VIEWER).json()
    assert state["restore_id"] == "restore-x" and state["restore"] is None
    assert client.get(f"{API}/restores", headers=VIEWER).json() == {"items": []}
