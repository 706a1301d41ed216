"""Issue 23: moving a group after a replay launched to an Airflow **connection**.

The replay DAG recorded the connection id as the target's bootstrap servers, so every group
move afterwards (the page, the group-offsets DAG, ``replay translate-group --apply``) connected
to a host named like the connection and failed after 15-50 s with a bare ``TimeoutError``, and
``--target-config bootstrap.servers=...`` did not override it. Here: a replay run through the
DAG's task bodies (as Airflow runs them) into librdkafka's mock cluster, target = a connection;
the plan records its servers; a replay recorded the old way (connection id as servers) is
moved by naming the servers or the connection; an unreachable target is a clear error.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from fastapi import FastAPI
from fastapi.testclient import TestClient
from kafka_archive.settings import load_settings
from kafka_archive.ui.api import URL_PREFIX, build_app
from support.catalog_data import archived_catalog
from support.cli_json import cli
from support.kafka_mock import MockCluster
from ui_fakes import Conn, RecordingLauncher, TokenAccess

pytestmark = pytest.mark.timeout(300)

C = "c1"
API = f"{URL_PREFIX}/api/v1"
OP = {"Authorization": "Bearer op-token"}
PROGRESS = "__kafka_archive_replay_progress"
CONN = "target_kafka"
#: before the first archived record: every group starts at the beginning of the replay
AT = "1700000000000"


def _replay_through_the_dag(params: dict[str, Any], launcher: RecordingLauncher) -> str:
    """The replay DAG's plan and execute tasks, as Airflow runs them; the replay id."""
    from kafka_archive.airflow.replay_tasks import execute_task, plan_task

    planned = plan_task(params, connection_getter=launcher.connection)
    execute_task(planned, params, connection_getter=launcher.connection)
    return str(planned["replay_id"])


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    hist, store, db = archived_catalog(tmp_path_factory.mktemp("group_conn"), cluster=C)
    mock = MockCluster(1)
    mock.create_topic(PROGRESS, 3)
    for topic in ("orders-new", "orders-old"):
        mock.create_topic(topic, 3)
    host, port = mock.bootstrap_servers.split(",")[0].rsplit(":", 1)
    launcher = RecordingLauncher(connections={CONN: Conn(host, int(port))})
    saved = {k: os.environ.get(k) for k in ("KAFKA_ARCHIVE_STORE", "KAFKA_ARCHIVE_DB")}
    os.environ.update(KAFKA_ARCHIVE_STORE=store, KAFKA_ARCHIVE_DB=db)
    base = {"cluster": C, "topic": "orders", "from": "earliest", "target": CONN}
    try:
        new_id = _replay_through_the_dag({**base, "target_topic": "orders-new"}, launcher)
        # a replay recorded as before the fix: its plan made without the connection, so the
        # connection id is its bootstrap servers (execute still resolved it, and ran)
        from kafka_archive.airflow.replay_tasks import execute_task, plan_task

        old_params = {**base, "target_topic": "orders-old"}
        planned = plan_task(old_params)
        execute_task(planned, old_params, connection_getter=launcher.connection)
        app = build_app(
            settings=lambda: load_settings({"db": db, "store": store}, env={}),
            access=TokenAccess(),
            launcher=launcher,
        )
        root = FastAPI()
        root.mount(URL_PREFIX, app)
        yield {
            "mock": mock,
            "store": store,
            "db": db,
            "hist": hist,
            "new": new_id,
            "old": str(planned["replay_id"]),
            "launcher": launcher,
            "client": TestClient(root),
        }
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        mock.close()


def _committed(r: dict[str, Any], topic: str, group: str) -> dict[int, int]:
    consumer = Consumer(
        {"bootstrap.servers": r["mock"].bootstrap_servers, "group.id": group}
        | {"enable.auto.commit": False}
    )
    try:
        got = consumer.committed([TopicPartition(topic, p) for p in range(3)], 10)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in got}


def _recorded(r: dict[str, Any], replay_id: str) -> Any:
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.replay.bookkeeping.ledger import ReplayLedger

    with open_catalog(r["db"]) as cat:
        plan = ReplayLedger(cat.engine).plan(replay_id)
    assert plan is not None
    return plan.spec.target


def test_the_replay_dag_records_the_connections_servers(replayed: dict[str, Any]) -> None:
    target = _recorded(replayed, replayed["new"])
    assert target.bootstrap_servers == replayed["mock"].bootstrap_servers
    assert target.name == CONN


def test_the_group_dag_moves_a_group_of_a_connection_replay(replayed: dict[str, Any]) -> None:
    """The group-offsets DAG's task, no 'target' given: the replay's own connection."""
    from kafka_archive.airflow.group_tasks import apply_task

    launcher = replayed["launcher"]
    for replay_id, topic in ((replayed["new"], "orders-new"), (replayed["old"], "orders-old")):
        conf = {"cluster": C, "topic": "orders", "group": f"dag-{topic}", "at": AT}
        out = apply_task({**conf, "replay_id": replay_id}, connection_getter=launcher.connection)
        assert out["target"] == {
            "bootstrap_servers": replayed["mock"].bootstrap_servers,
            "name": CONN,
        }
        want = {row["partition"]: row["offset"] for row in out["items"]}
        assert want and _committed(replayed, topic, f"dag-{topic}") == want


def test_the_cli_moves_a_group_of_a_connection_replay(replayed: dict[str, Any]) -> None:
    r = replayed
    args = ["replay", "translate-group", "--cluster", C, "--topic", "orders", "--at", AT]
    db = ["--store", r["store"], "--db", r["db"], "--json"]
    code, rows, text = cli(*args, "--group", "cli-new", "--replay", r["new"], "--apply", *db)
    assert code == 0, text
    assert _committed(r, "orders-new", "cli-new") == {x["partition"]: x["offset"] for x in rows}
    # recorded the old way: a clear usage error naming the way out, at once
    code, rows, text = cli(*args, "--group", "cli-old", "--replay", r["old"], "--apply", *db)
    assert code == 2, text
    assert CONN in rows[-1]["message"] and "connection" in rows[-1]["message"]
    assert "--target-config bootstrap.servers=" in rows[-1]["hint"]
    # ... and the servers given win over what was recorded
    servers = f"bootstrap.servers={r['mock'].bootstrap_servers}"
    code, rows, text = cli(
        *args, "--group", "cli-old", "--replay", r["old"], "--apply",
        "--target-config", servers, *db,
    )  # fmt: skip
    assert code == 0, text
    assert _committed(r, "orders-old", "cli-old") == {x["partition"]: x["offset"] for x in rows}


def test_an_unreachable_target_is_a_clear_error(replayed: dict[str, Any]) -> None:
    r = replayed
    code, rows, text = cli(
        "replay", "translate-group", "--cluster", C, "--topic", "orders", "--at", AT,
        "--group", "nowhere", "--replay", r["new"], "--apply",
        "--target-config", "bootstrap.servers=127.0.0.1:1",
        "--store", r["store"], "--db", r["db"], "--json",
    )  # fmt: skip
    assert code == 1, text
    assert "internal error" not in text and "TimeoutError" not in text
    assert "127.0.0.1:1" in rows[-1]["message"] and "did not answer" in rows[-1]["message"]
    assert rows[-1]["field"] == "target"


def test_the_page_previews_and_moves_a_group_of_a_connection_replay(
    replayed: dict[str, Any],
) -> None:
    """The on-call API's preview shows the servers the run will use (the replay's connection
    resolved, for the old record too), and the run it triggers commits there."""
    from kafka_archive.airflow.group_tasks import apply_task

    r = replayed
    client, launcher = r["client"], r["launcher"]
    for replay_id, topic in ((r["new"], "orders-new"), (r["old"], "orders-old")):
        body = {"cluster": C, "topic": "orders", "group": f"page-{topic}", "at": AT}
        body["replay_id"] = replay_id
        preview = client.post(f"{API}/groups/translate/preview", headers=OP, json=body)
        assert preview.status_code == 200, preview.text
        assert preview.json()["target"] == {
            "bootstrap_servers": r["mock"].bootstrap_servers,
            "name": CONN,
        }
        run = client.post(f"{API}/groups/translate/apply", headers=OP, json=body)
        assert run.status_code == 201, run.text
        conf, _user = launcher.triggered[-1]
        out = apply_task(conf, connection_getter=launcher.connection)
        want = {row["partition"]: row["offset"] for row in out["items"]}
        assert _committed(r, topic, f"page-{topic}") == want


def test_a_vanished_connection_is_refused_before_any_run(replayed: dict[str, Any]) -> None:
    r = replayed
    launcher = r["launcher"]
    conn = launcher.connections.pop(CONN)
    try:
        body = {"cluster": C, "topic": "orders", "group": "gone", "at": AT}
        body["replay_id"] = r["old"]
        before = len(launcher.triggered)
        got = r["client"].post(f"{API}/groups/translate/apply", headers=OP, json=body)
        assert got.status_code in (400, 409, 422), got.text
        assert CONN in got.json()["message"]
        assert got.json()["field"] == "target"
        assert launcher.triggered[before:] == []
    finally:
        launcher.connections[CONN] = conn


def test_api_errors_speak_the_pages_words_and_the_cli_its_flags(
    replayed: dict[str, Any],
) -> None:
    """Issue 23: the API said "Choose one with --replay ID" and "pass --create-topic"; it now
    names the page's fields, and ``field`` says which one to show the message next to. The
    CLI keeps its options."""
    r = replayed
    client = r["client"]
    body = {"cluster": C, "topic": "orders", "group": "either", "at": AT}  # two replays
    got = client.post(f"{API}/groups/translate/preview", headers=OP, json=body)
    assert got.status_code == 409, got.text
    err = got.json()
    assert err["field"] == "replay_id"
    assert "“Replay id”" in err["hint"] and "--" not in f"{err['message']} {err['hint']}"
    code, rows, text = cli(
        "replay", "translate-group", "--cluster", C, "--topic", "orders", "--at", AT,
        "--group", "either", "--store", r["store"], "--db", r["db"], "--json",
    )  # fmt: skip
    assert code != 0 and "--replay ID" in rows[-1]["hint"], text

    replay = {"cluster": C, "topic": "orders", "from": "earliest", "target": CONN}
    got = client.post(
        f"{API}/replay/preview", headers=OP, json={**replay, "target_topic": "absent"}
    )
    assert got.status_code == 400, got.text
    err = got.json()
    assert err["field"] == "target_topic", err
    assert "tick “create target topic”" in err["hint"], err
    assert "--" not in f"{err['message']} {err['hint']}"
    empty = client.post(f"{API}/replay/preview", headers=OP, json={**replay, "target": ""})
    assert empty.status_code == 422, empty.text
    assert empty.json()["field"] == "target" and empty.json()["message"] == "Target is empty"
