"""`kafka-archive demo --ui`: Airflow over the demo's folder with the plugins folder that holds
the on-call page, the demo's catalog settings, and a login."""

from __future__ import annotations

from pathlib import Path

from kafka_archive.demo import UI_USER, DemoPaths, ui_command


def test_the_demo_serves_airflow_with_the_on_call_plugin(tmp_path: Path) -> None:
    argv, env = ui_command(tmp_path, 18080)
    assert Path(argv[0]).name == "airflow" and argv[1:] == ["standalone"]
    plugins = Path(env["AIRFLOW__CORE__PLUGINS_FOLDER"])
    assert (plugins / "kafka_archive_ui.py").is_file()
    assert "KafkaArchiveUiPlugin" in (plugins / "kafka_archive_ui.py").read_text()
    paths = DemoPaths(tmp_path)
    assert env["AIRFLOW_HOME"] == str(paths.airflow_home)
    assert env["KAFKA_ARCHIVE_DB"] == paths.db_url
    assert env["KAFKA_ARCHIVE_STORE"] == paths.store_uri
    assert env["AIRFLOW__API__PORT"] == "18080"
    assert env["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS"] == f"{UI_USER}:admin"
