""" "Start group G at T on the target" through the on-call API: after a real replay into
librdkafka's mock cluster, the API's preview is `replay translate-group --json`'s answer, and
apply triggers a run of ``kafka_archive_group_offsets`` (the recording launcher stands in for
Airflow) whose task, run here as Airflow runs it, commits those positions on the replay's
target; its secret settings come from the Airflow connection the request names, server side,
and appear in no Params, answer or XCom."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from fastapi import FastAPI
from fastapi.testclient import TestClient
from kafka_archive.settings import load_settings
from kafka_archive.ui.api import URL_PREFIX, build_app
from support.catalog_data import History, archived_catalog
from support.cli_json import cli
from support.kafka_mock import MockCluster
from ui_fakes import Conn, RecordingLauncher, TokenAccess

pytestmark = pytest.mark.timeout(300)

C = "c1"
API = f"{URL_PREFIX}/api/v1"
OP = {"Authorization": "Bearer op-token"}
PROGRESS = "__kafka_archive_replay_progress"
SECRET = "s3cret-target-pw"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    hist: History
    hist, store, db = archived_catalog(tmp_path_factory.mktemp("ui_groups"), cluster=C)
    mock = MockCluster(1)
    mock.create_topic(PROGRESS, 3)
    mock.create_topic("orders-replayed", 3)
    code, out, text = cli(
        "replay", "run", "--cluster", C, "--topic", "orders", "--from", "earliest",
        "--target", mock.bootstrap_servers, "--target-topic", "orders-replayed",
        "--store", store, "--db", db, "--json",
    )  # fmt: skip
    assert code == 0, text
    host, port = mock.bootstrap_servers.split(",")[0].rsplit(":", 1)
    # the target's "secret" rides in the connection (the mock ignores it): it must never
    # reach a run's Params, an answer or an XCom
    launcher = RecordingLauncher(
        connections={"target_kafka": Conn(host, int(port), password=SECRET)}
    )
    app = build_app(
        settings=lambda: load_settings({"db": db, "store": store}, env={}),
        access=TokenAccess(),
        launcher=launcher,
    )
    root = FastAPI()
    root.mount(URL_PREFIX, app)
    yield {
        "client": TestClient(root),
        "mock": mock,
        "store": store,
        "db": db,
        "hist": hist,
        "replay_id": out[-1]["replay_id"],
        "launcher": launcher,
    }
    mock.close()


def _cli_rows(r: dict[str, Any], *args: str) -> list[dict[str, Any]]:
    code, lines, text = cli(
        "replay", "translate-group", "--cluster", C, "--topic", "orders",
        "--replay", r["replay_id"], "--store", r["store"], "--db", r["db"], "--json", *args,
    )  # fmt: skip
    assert code == 0, text
    return lines


def test_preview_from_archived_commits_is_the_clis(replayed: dict[str, Any]) -> None:
    body = {"cluster": C, "topic": "orders", "group": "billing", "replay_id": replayed["replay_id"]}
    got = replayed["client"].post(f"{API}/groups/translate/preview", headers=OP, json=body)
    assert got.status_code == 200, got.text
    rows = _cli_rows(replayed, "--group", "billing")
    assert rows and got.json()["items"] == rows
    assert got.json()["basis"] == "the group's archived commits"


def _committed(r: dict[str, Any], group: str, partitions: list[int]) -> dict[int, int]:
    consumer = Consumer(
        {
            "bootstrap.servers": r["mock"].bootstrap_servers,
            "group.id": group,
            "enable.auto.commit": False,
        }
    )
    try:
        got = consumer.committed([TopicPartition("orders-replayed", p) for p in partitions], 10)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in got}


def test_apply_is_a_group_offsets_dag_run_whose_task_commits_the_preview(
    replayed: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_archive.airflow.group_tasks import apply_task
    from kafka_archive.timeparse import format_ms

    hist: History = replayed["hist"]
    launcher: RecordingLauncher = replayed["launcher"]
    t = sorted(ts for v in hist.commits.values() for ts, _o in v)[len(hist.commits) // 2]
    body = {
        "cluster": C,
        "topic": "orders",
        "group": "fresh",
        "at": str(t),
        "replay_id": replayed["replay_id"],
        "target": "target_kafka",
    }
    client = replayed["client"]
    preview = client.post(f"{API}/groups/translate/preview", headers=OP, json=body).json()
    assert preview["items"] == _cli_rows(replayed, "--group", "fresh", "--at", str(t))
    assert preview["at"]["ms"] == t
    assert not any(row["applied"] for row in preview["items"])
    before = len(launcher.triggered)
    got = client.post(f"{API}/groups/translate/apply", headers=OP, json=body)
    assert got.status_code == 201, got.text
    run = got.json()
    # a run of the group-offsets DAG, triggered by the user, with the checked request as its
    # Params: the time pinned to the instant previewed, the target a connection id only
    assert run["dag_id"] == "kafka_archive_group_offsets" and run["state"] == "queued"
    assert run["url"] == f"/dags/kafka_archive_group_offsets/runs/{run['run_id']}"
    assert run["preview"] == preview
    ((conf, user),) = launcher.triggered[before:]
    assert user == "oncall" and conf == run["params"]
    assert conf == {**body, "at": format_ms(t), "commits_at": None, "target_topic": None}
    assert SECRET not in got.text and SECRET not in json.dumps(conf)
    partitions = [row["partition"] for row in preview["items"]]
    assert all(o < 0 for o in _committed(replayed, "fresh", partitions).values())  # not yet
    # the page polls the run by GET with the session cookie alone (no CSRF header): read access
    client.cookies.set("_token", "viewer-token")
    try:
        state = client.get(f"{API}/groups/translate/runs/{run['run_id']}").json()
    finally:
        client.cookies.clear()
    assert (state["state"], state["applied"]) == ("queued", None)

    # the run's task, as Airflow runs it (its secrets from the connection, server side)
    monkeypatch.setenv("KAFKA_ARCHIVE_STORE", replayed["store"])
    monkeypatch.setenv("KAFKA_ARCHIVE_DB", replayed["db"])
    result = apply_task(conf, connection_getter=launcher.connection)
    assert SECRET not in json.dumps(result)  # the XCom
    assert result["items"] == [{**row, "applied": True} for row in preview["items"]]
    positions = {row["partition"]: row["offset"] for row in preview["items"]}
    assert _committed(replayed, "fresh", partitions) == positions
    # a retry commits the same offsets again: nothing moves
    assert apply_task(conf, connection_getter=launcher.connection) == result
    assert _committed(replayed, "fresh", partitions) == positions

    launcher.results[run["run_id"]] = ("apply", result)
    launcher.states[run["run_id"]] = "success"
    state = client.get(f"{API}/groups/translate/runs/{run['run_id']}", headers=OP).json()
    assert (state["state"], state["applied"]) == ("success", result)
    missing = client.get(f"{API}/groups/translate/runs/nope", headers=OP)
    assert missing.status_code == 404 and missing.json()["error"] == "not_found"


def test_apply_from_the_latest_commits_pins_them_to_the_preview(
    replayed: dict[str, Any],
) -> None:
    """Without ``at`` or ``commits_at`` the positions come from the group's latest archived
    commits: the run's Params pin them to the preview's moment, so commits archived before the
    run's task starts cannot change what it commits."""
    from kafka_archive.timeparse import parse_time_ms

    launcher: RecordingLauncher = replayed["launcher"]
    body = {"cluster": C, "topic": "orders", "group": "billing", "replay_id": replayed["replay_id"]}
    before_ms = int(time.time() * 1000)
    got = replayed["client"].post(f"{API}/groups/translate/apply", headers=OP, json=body)
    assert got.status_code == 201, got.text
    ((conf, _user),) = launcher.triggered[-1:]
    pinned = parse_time_ms(conf["commits_at"])
    assert before_ms <= pinned <= int(time.time() * 1000)
    assert got.json()["preview"]["commits_at"]["ms"] == pinned
    assert got.json()["preview"]["items"] == _cli_rows(replayed, "--group", "billing")


def test_a_bad_group_request_fails_as_the_preview_does_and_triggers_nothing(
    replayed: dict[str, Any],
) -> None:
    launcher: RecordingLauncher = replayed["launcher"]
    client = replayed["client"]
    good = {"cluster": C, "topic": "orders", "group": "g2", "replay_id": replayed["replay_id"]}
    before = len(launcher.triggered)
    for change, status, error in [
        ({"at": "soon"}, 400, "bad_time"),
        ({"commits_at": "99999-01-01"}, 400, "bad_time"),
        ({"replay_id": "r-nope"}, None, None),
        ({"target": "no_such_conn"}, 422, "unknown_connection"),
        ({"group": ""}, 422, None),
        ({"extra": 1}, 422, None),
    ]:
        body = {**good, **change}
        shown = client.post(f"{API}/groups/translate/preview", headers=OP, json=body)
        applied = client.post(f"{API}/groups/translate/apply", headers=OP, json=body)
        assert 400 <= shown.status_code < 500, (change, shown.text)
        assert (applied.status_code, applied.json()) == (shown.status_code, shown.json())
        assert status is None or shown.status_code == status, (change, shown.text)
        assert error is None or shown.json()["error"] == error, (change, shown.text)
    assert launcher.triggered[before:] == []


def test_applying_needs_trigger_permission_on_the_group_dag(replayed: dict[str, Any]) -> None:
    launcher: RecordingLauncher = replayed["launcher"]
    client = replayed["client"]
    replayer = {"Authorization": "Bearer replayer-token"}
    assert client.get(f"{API}/whoami", headers=replayer).json() == {
        "user": "replayer",
        "can_trigger": True,
        "can_apply_groups": False,
        "can_restore": False,
    }
    body = {"cluster": C, "topic": "orders", "group": "g3", "replay_id": replayed["replay_id"]}
    before = len(launcher.triggered)
    got = client.post(f"{API}/groups/translate/apply", headers=replayer, json=body)
    assert got.status_code == 403, got.text
    assert got.json()["error"] == "forbidden"
    assert "kafka_archive_group_offsets" in got.json()["message"]
    assert launcher.triggered[before:] == []


def test_the_task_refuses_an_unknown_connection_typed(
    replayed: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_archive.airflow.group_tasks import apply_task
    from kafka_archive.replay.errors import GroupTranslationError

    monkeypatch.setenv("KAFKA_ARCHIVE_STORE", replayed["store"])
    monkeypatch.setenv("KAFKA_ARCHIVE_DB", replayed["db"])
    conf = {"cluster": C, "topic": "orders", "group": "g4", "at": "earliest", "target": "nope"}
    with pytest.raises(GroupTranslationError) as caught:
        apply_task(conf, connection_getter=replayed["launcher"].connection)
    assert "nope" in caught.value.message and "Admin > Connections" in caught.value.hint


def test_the_request_model_is_the_group_dags_params() -> None:
    from kafka_archive.airflow.group_tasks import PARAMS_SCHEMA
    from kafka_archive.ui.models import GroupRequest

    fields = GroupRequest.model_fields
    assert set(fields) == set(PARAMS_SCHEMA)
    for name, field in fields.items():
        default = PARAMS_SCHEMA[name][0]
        assert field.is_required() == (default == ""), name
        if not field.is_required():
            assert field.get_default(call_default_factory=True) == default, name


def test_preview_checks_the_target_and_a_dead_one_is_a_502(replayed: dict[str, Any]) -> None:
    client = replayed["client"]
    body = {
        "cluster": C,
        "topic": "orders",
        "from": "earliest",
        "target": "target_kafka",
        "target_topic": "orders-replayed",
    }
    got = client.post(f"{API}/replay/preview", headers=OP, json=body)
    assert got.status_code == 200, got.text
    assert got.json()["target_check"]["partitions"] == 3
    assert got.json()["target_check"]["topic_would_be_created"] is False
    dead = client.post(f"{API}/replay/preview", headers=OP, json={**body, "target": "127.0.0.1:1"})
    assert dead.status_code == 502, dead.text
    assert dead.json()["error"] == "target_unavailable"
    assert "127.0.0.1:1" in dead.json()["message"]
