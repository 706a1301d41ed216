"""`./dev demo --ui`: Airflow over the demo's folder with the plugins folder that holds
the on-call page, the demo's catalog settings, a login, and a live target (an Airflow
connection) for replays launched from the page."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kafka_archive_dev.demo import (
    UI_REPLAY_TOPIC,
    UI_TARGET_CONN,
    UI_USER,
    DemoPaths,
    ui_command,
    ui_target,
)
from kafka_archive_dev.embedded_kafka import read_to_end


def test_the_demo_serves_airflow_with_the_on_call_plugin(tmp_path: Path) -> None:
    argv, env = ui_command(tmp_path, 18080)
    assert Path(argv[0]).name == "airflow" and argv[1:] == ["standalone"]
    # standalone runs its components as plain `airflow`: this environment's must come first
    assert env["PATH"].split(os.pathsep)[0] == str(Path(argv[0]).parent)
    plugins = Path(env["AIRFLOW__CORE__PLUGINS_FOLDER"])
    assert (plugins / "kafka_archive_ui.py").is_file()
    assert "KafkaArchiveUiPlugin" in (plugins / "kafka_archive_ui.py").read_text()
    paths = DemoPaths(tmp_path)
    assert env["AIRFLOW_HOME"] == str(paths.airflow_home)
    assert env["KAFKA_ARCHIVE_DB"] == paths.db_url
    assert env["KAFKA_ARCHIVE_STORE"] == paths.store_uri
    assert env["AIRFLOW__API__PORT"] == "18080"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == f"{UI_USER}:admin"
    assert not any(k.startswith("AIRFLOW_CONN_") for k in env)


def test_replays_from_the_demo_page_have_a_live_target(tmp_path: Path) -> None:
    with ui_target(tmp_path, kafka="mock") as bootstrap:
        _argv, env = ui_command(tmp_path, 18080, bootstrap)
        conn = json.loads(env[f"AIRFLOW_CONN_{UI_TARGET_CONN.upper()}"])
        assert conn["host"] == bootstrap
        producer = Producer({"bootstrap.servers": bootstrap})
        producer.produce(UI_REPLAY_TOPIC, b"v", key=b"k", partition=1)
        assert producer.flush(10) == 0
        got = read_to_end(bootstrap, UI_REPLAY_TOPIC, [0, 1, 2])
        assert [r.value for r in got[1]] == [b"v"]


def test_the_default_relative_root_is_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`./dev demo --ui` runs with the default root `.work/demo`, relative to the checkout: the
    store's file URI (which cannot be relative) and every path Airflow gets are absolute."""
    monkeypatch.chdir(tmp_path)
    _argv, env = ui_command(Path(".work/demo"), 18080)
    root = tmp_path / ".work" / "demo"
    assert env["KAFKA_ARCHIVE_STORE"] == (root / "store").as_uri()
    assert env["AIRFLOW_HOME"] == str(root / "airflow")
    assert env["KAFKA_ARCHIVE_DB"] == f"sqlite:///{root / 'catalog.sqlite'}"
