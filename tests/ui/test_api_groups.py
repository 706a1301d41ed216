""" "Start group G at T on the target" through the on-call API: after a real replay into
librdkafka's mock cluster, the API's preview is `replay translate-group --json`'s answer, and
apply commits those positions on the replay's target (secret settings, if any, would come from
the Airflow connection the request names, server side)."""

from __future__ import annotations

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
    launcher = RecordingLauncher(connections={"target_kafka": Conn(host, int(port))})
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


def test_preview_at_t_is_the_clis_and_apply_commits_on_the_target(
    replayed: dict[str, Any],
) -> None:
    hist: History = replayed["hist"]
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
    applied = client.post(f"{API}/groups/translate/apply", headers=OP, json=body)
    assert applied.status_code == 200, applied.text
    rows = applied.json()["items"]
    assert all(row["applied"] for row in rows)
    positions = {row["partition"]: row["offset"] for row in rows}
    consumer = Consumer(
        {
            "bootstrap.servers": replayed["mock"].bootstrap_servers,
            "group.id": "fresh",
            "enable.auto.commit": False,
        }
    )
    committed = consumer.committed(
        [TopicPartition("orders-replayed", p) for p in positions], timeout=10
    )
    consumer.close()
    assert {tp.partition: tp.offset for tp in committed} == positions


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
