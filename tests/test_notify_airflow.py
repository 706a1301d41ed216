"""Notifications with a real Airflow (subprocesses in an isolated Airflow home, see
``support.airflow``): every DAG of ``dags/`` carries the failure and retry notifier, the archive
and catalog DAGs carry the deadline of their setting (and none without it), and a task that
fails under Airflow's own task runner POSTs its retry and its failure to a real local HTTP
server.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from support.webhook import Receiver

if TYPE_CHECKING:
    from support.airflow import AirflowHome

pytest_plugins = ["support.airflow"]

PARSE = """
import json
from airflow.dag_processing.dagbag import DagBag

bag = DagBag(dag_folder={dags!r}, safe_mode=False)
out = {{"errors": {{k: str(v)[-1500:] for k, v in bag.import_errors.items()}}, "dags": {{}}}}
for dag_id, dag in bag.dags.items():
    deadlines = dag.deadline or []
    out["dags"][dag_id] = {{
        "tasks": {{
            t.task_id: {{
                kind: [f"{{type(c).__name__}}:{{c.event}}" for c in getattr(t, attr) or []]
                for kind, attr in (("failure", "on_failure_callback"),
                                   ("retry", "on_retry_callback"))
            }}
            for t in dag.tasks
        }},
        "deadlines": [
            {{"seconds": d.interval.total_seconds(), "reference": d.reference.reference_name,
              "callback": d.callback.path}}
            for d in deadlines
        ],
    }}
print("RESULT " + json.dumps(out))
"""


def _parse(home: AirflowHome, env: dict[str, str]) -> dict[str, Any]:
    from support.airflow import run_airflow_python

    out: dict[str, Any] = run_airflow_python(
        home, PARSE.format(dags=home.env["AIRFLOW__CORE__DAGS_FOLDER"]), extra_env=env
    )
    assert out["errors"] == {}
    return out


#: the platform's DAGs, each of which must notify on failure and retry
PLATFORM_DAGS = {
    "kafka_archive_segments",
    "kafka_archive_catalog",
    "kafka_archive_replay",
    "kafka_archive_export",
    "kafka_archive_prune",
    "kafka_archive_offsets",
    "kafka_archive_group_offsets",
    "kafka_archive_metadata_snapshot",
}


def test_every_dag_notifies_and_archive_and_catalog_have_their_deadlines(
    airflow_home: AirflowHome,
) -> None:
    out = _parse(
        airflow_home,
        {"KAFKA_ARCHIVE_ARCHIVE_DEADLINE": "45m", "KAFKA_ARCHIVE_CATALOG_DEADLINE": "3h"},
    )
    assert set(out["dags"]) >= PLATFORM_DAGS
    for dag_id in PLATFORM_DAGS:
        tasks = out["dags"][dag_id]["tasks"]
        assert tasks, dag_id
        for task_id, callbacks in tasks.items():
            assert callbacks == {
                "failure": ["KafkaArchiveNotifier:failure"],
                "retry": ["KafkaArchiveNotifier:retry"],
            }, (dag_id, task_id)
    expected = {"kafka_archive_segments": 45 * 60, "kafka_archive_catalog": 3 * 3600}
    for dag_id in PLATFORM_DAGS:
        deadlines = out["dags"][dag_id]["deadlines"]
        if dag_id in expected:
            assert deadlines == [
                {
                    "seconds": expected[dag_id],
                    "reference": "DagRunQueuedAtDeadline",
                    "callback": "kafka_archive.airflow.notify.deadline_missed",
                }
            ]
        else:
            assert deadlines == [], dag_id


def test_without_deadline_settings_no_dag_has_a_deadline(airflow_home: AirflowHome) -> None:
    out = _parse(airflow_home, {})
    assert all(d["deadlines"] == [] for d in out["dags"].values())


def test_a_bad_deadline_setting_is_an_import_error_naming_it(airflow_home: AirflowHome) -> None:
    from support.airflow import run_airflow_python

    out = run_airflow_python(
        airflow_home,
        PARSE.format(dags=airflow_home.env["AIRFLOW__CORE__DAGS_FOLDER"]),
        extra_env={"KAFKA_ARCHIVE_CATALOG_DEADLINE": "tomorrow"},
    )
    errors = {k.rsplit("/", 1)[-1]: v for k, v in out["errors"].items()}
    assert set(errors) == {"kafka_archive_catalog.py"}
    assert "catalog_deadline" in errors["kafka_archive_catalog.py"]


PROBE_DAG = """
from datetime import datetime, timedelta, UTC
from airflow.sdk import dag, task
from kafka_archive.airflow.notify import alerting_args

@dag(dag_id="notify_probe", schedule=None, start_date=datetime(2024, 1, 1, tzinfo=UTC),
     catchup=False, default_args={"retries": 1, "retry_delay": timedelta(0), **alerting_args()})
def notify_probe():
    @task
    def fails():
        raise RuntimeError("catalog unreachable: postgresql://catalog:hunter22@db/cat\\nmore")
    fails()

notify_probe()
"""

RUN = """
import json
from airflow.dag_processing.dagbag import DagBag

bag = DagBag(dag_folder={folder!r})
assert not bag.import_errors, bag.import_errors
dr = bag.get_dag("notify_probe").test()
print("RESULT " + json.dumps({{"state": str(getattr(dr.state, "value", dr.state))}}))
"""


def test_a_failing_task_posts_its_retry_and_its_failure(
    airflow_home: AirflowHome, tmp_path: Path
) -> None:
    from support.airflow import run_airflow_python

    (tmp_path / "notify_probe.py").write_text(PROBE_DAG)
    receiver = Receiver()
    try:
        out = run_airflow_python(
            airflow_home,
            RUN.format(folder=str(tmp_path)),
            # the probe's folder is the DAGs folder: dag.test() runs what the bundle holds
            extra_env={
                "KAFKA_ARCHIVE_NOTIFY_WEBHOOK": receiver.url(),
                "AIRFLOW__CORE__DAGS_FOLDER": str(tmp_path),
            },
        )
    finally:
        receiver.close()
    assert out["state"] == "failed"
    bodies = [p["json"] for p in receiver.posts]
    assert [(b["event"], b["try_number"]) for b in bodies] == [("retry", 1), ("failure", 2)]
    for b in bodies:
        assert (b["dag_id"], b["task_id"]) == ("notify_probe", "fails")
        assert b["run_id"]
        assert b["error"].startswith("RuntimeError: catalog unreachable: postgresql://catalog:")
        assert "hunter22" not in json_text(b)
        assert "/dags/notify_probe/runs/" in b["url"]


def json_text(body: dict[str, Any]) -> str:
    import json

    return json.dumps(body)
