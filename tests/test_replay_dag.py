"""The ``kafka_archive_replay`` DAG run through ``dag.test()`` in an isolated Airflow.

The Airflow subprocess hosts librdkafka's mock cluster (the target) and runs the DAG three
times: a dry run (plan -> execute skipped -> report shows the plan, nothing sent), a real
replay (records read back equal the expected ones), and the same trigger again (the replay is
found complete: nothing sent twice). Invalid params are refused by the JSON Schema.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from kafka_archive.archive.runner import run_archive
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.store import open_store
from kafka_archive_dev.writer.broker_writer import BrokerWriter

from tests.support.replay_data import write_source_topic

if TYPE_CHECKING:
    from support.airflow import AirflowHome

pytest_plugins = ["support.airflow"]
pytestmark = pytest.mark.timeout(900)

REPO = Path(__file__).resolve().parents[1]

SNIPPET = """
import json, sys
sys.path.insert(0, {repo!r})
from airflow.dag_processing.dagbag import DagBag
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session
from kafka_archive_dev.embedded_kafka import read_to_end
from tests.support.kafka_mock import MockCluster

mock = MockCluster(3)
mock.create_topic("__kafka_archive_replay_progress", 4)
mock.create_topic("orders-dr", 3)
bag = DagBag(dag_folder={dags!r})
assert not bag.import_errors, bag.import_errors
dag = bag.get_dag("kafka_archive_replay")
out = {{"runs": [], "params": {{k: v.schema for k, v in dag.params.items()}},
        "schedule": str(dag.schedule), "tags": sorted(dag.tags), "doc": bool(dag.doc_md)}}
conf = {{"cluster": "east", "topic": "orders", "from": "earliest",
         "target": mock.bootstrap_servers, "target_topic": "orders-dr",
         "provenance_headers": True, "dry_run": False}}

def run(**extra):
    dr = dag.test(run_conf={{**conf, **extra}})
    states = {{ti.task_id: str(getattr(ti.state, "value", ti.state))
              for ti in dr.get_task_instances()}}
    with create_session() as s:
        rows = s.scalars(XComModel.get_many(run_id=dr.run_id, key="return_value",
                                            task_ids="report", dag_ids=dag.dag_id)).all()
        report = XComModel.deserialize_value(rows[0]) if rows else None
    out["runs"].append({{"state": str(getattr(dr.state, "value", dr.state)), "tasks": states,
                        "report": report}})

run(dry_run=True)
def count():
    return sum(len(v) for v in read_to_end(mock.bootstrap_servers, "orders-dr", [0, 1, 2]).values())

out["after_dry_run"] = count()
run()
got = read_to_end(mock.bootstrap_servers, "orders-dr", [0, 1, 2])
out["got"] = {{p: [[s.timestamp, s.key.hex() if s.key else None, s.value.hex() if s.value else None]
              for s in v] for p, v in got.items()}}
run()
out["after_rerun"] = count()
try:
    dag.test(run_conf={{**conf, "partition_mapping": "bogus"}})
    out["bad_params"] = "accepted"
except Exception as exc:
    out["bad_params"] = type(exc).__name__ + ": " + str(exc)[:300]
# issue 20.6: a secret in the conf is refused before the run is stored (conf readable by viewers)
try:
    dag.test(run_conf={{**conf, "target_config": {{"sasl.password": "hunter2-in-conf"}}}})
    out["secret_params"] = "accepted"
except Exception as exc:
    out["secret_params"] = type(exc).__name__ + ": " + str(exc)
from airflow.models.dagrun import DagRun
from sqlalchemy import select
with create_session() as s:
    out["stored_confs"] = json.dumps([r for r in s.scalars(select(DagRun.conf)).all()])
print("RESULT " + json.dumps(out))
"""


def test_replay_dag(airflow_home: AirflowHome, tmp_path: Path) -> None:
    from support.airflow import run_airflow_python

    broker = BrokerWriter(tmp_path / "b1", 1, cluster_id="dag-src", offsets_partitions=3)
    parts = write_source_topic(tmp_path, "orders", 3, seed=13, rounds=25, broker=broker)
    broker.close()
    store = open_store(str(tmp_path / "store"))
    run_archive(
        cluster="east", broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store
    )
    db_url = f"sqlite:///{tmp_path / 'catalog.db'}"
    with open_catalog(db_url, create=True) as catalog:
        build_catalog(catalog, store.uri, cluster="east")
    out: dict[str, Any] = run_airflow_python(
        airflow_home,
        SNIPPET.format(repo=str(REPO), dags=airflow_home.env["AIRFLOW__CORE__DAGS_FOLDER"]),
        extra_env={"KAFKA_ARCHIVE_STORE": store.uri, "KAFKA_ARCHIVE_DB": db_url},
    )
    assert out["schedule"] == "None" and "replay" in out["tags"] and out["doc"]
    assert out["params"]["partition_mapping"]["enum"] == ["same", "murmur2", "round-robin"]
    assert {"cluster", "topic", "from", "to", "target", "target_topic", "partitions",
            "preserve_timestamps", "provenance_headers", "key_filter", "rate_limit_mb",
            "rate_limit_records", "dry_run", "create_topic", "topic_config", "no_source_config",
            "replication_factor"} <= set(out["params"])  # fmt: skip
    dry, real, again = out["runs"]
    assert dry["state"] == "success", dry["tasks"]
    assert dry["tasks"] == {"plan": "success", "execute": "skipped", "report": "success"}
    assert dry["report"]["dry_run"] is True
    assert {int(p): r["end_offset"] for p, r in dry["report"]["partitions"].items()} == {
        p: sp.log_end_offset for p, sp in parts.items()
    }
    assert out["after_dry_run"] == 0
    assert real["state"] == "success", real["tasks"]
    assert real["report"]["records_sent"] > 0, real["report"]
    assert real["report"]["records_sent"] == sum(len(sp.expected) for sp in parts.values())
    # the target check's view of the target topic's configs reaches the report (librdkafka's
    # mock target cannot answer DescribeConfigs: one warning says they were not checked)
    warnings = real["report"]["topic_config"]["warnings"]
    assert any("could not be read" in w for w in warnings), warnings
    for p, sp in parts.items():
        assert out["got"][str(p)] == [
            [e.timestamp, e.key.hex() if e.key else None, e.value.hex() if e.value else None]
            for e in sp.expected
        ]
    assert again["state"] == "success"
    assert again["report"]["status"] == "already-done"
    assert out["after_rerun"] == real["report"]["records_sent"]
    assert out["bad_params"] != "accepted" and "bogus" in out["bad_params"]
    assert out["secret_params"].startswith("ParamValidationError"), out["secret_params"]
    assert "target_config" in out["secret_params"]
    assert "hunter2-in-conf" not in out["secret_params"]
    assert "hunter2-in-conf" not in out["stored_confs"] and "orders-dr" in out["stored_confs"]


SECRET = "hunter2-in-conf"
_CONF = {"cluster": "east", "topic": "orders", "from": "earliest", "target": "kafka_dr"}


@pytest.mark.parametrize(
    "field,key",
    [
        ("target_config", "sasl.password"),
        ("target_config", "sasl.oauthbearer.client.secret"),
        ("target_config", "ssl.key.password"),
        ("target_config", "ssl.keystore.password"),
        ("target_config", "ssl.key.pem"),
        ("topic_config", "some.token"),
    ],
)
def test_a_secret_in_the_params_is_refused_when_the_run_is_created(field: str, key: str) -> None:
    """Issue 20.6: the DAG's Params schema refuses a secret-named setting, so Airflow refuses
    a run (the UI's form, its REST API) before storing its conf, without echoing the value;
    the tasks refuse it too (a run made some other way), before anything is resolved or
    done."""
    from airflow.exceptions import ParamValidationError
    from kafka_archive.airflow.replay_tasks import execute_task, plan_task, spec_from_params
    from kafka_archive.replay.errors import ReplayConfigError

    conf = {**_CONF, field: {"security.protocol": "SASL_SSL", key: SECRET}}
    with pytest.raises(ParamValidationError) as refused:
        _validate_like_airflow(conf)
    assert field in str(refused.value) and SECRET not in str(refused.value)
    for call in (
        lambda: spec_from_params(conf),
        lambda: plan_task(conf),
        lambda: execute_task({}, conf, connection_getter=_no_connection),
    ):
        with pytest.raises(ReplayConfigError) as typed:
            call()
        assert f"{field}.{key}" in typed.value.message and SECRET not in typed.value.message
        assert "Airflow connection" in typed.value.hint
    # the same settings without the secret pass the schema
    _validate_like_airflow({**_CONF, field: {"security.protocol": "SASL_SSL"}})


def _no_connection(conn_id: str) -> Any:
    raise AssertionError(f"connection {conn_id} resolved for a refused run")


def _validate_like_airflow(conf: dict[str, Any]) -> None:
    """What Airflow's ``create_dagrun`` does with a run's conf before storing the run: the
    DAG's serialized Params merged with the conf, then validated."""
    from airflow.serialization.definitions.param import SerializedParam, SerializedParamsDict
    from kafka_archive.airflow import dag_params
    from kafka_archive.airflow.replay_tasks import PARAMS_SCHEMA

    params = SerializedParamsDict(
        {
            k: SerializedParam(p.value, p.description, **p.schema)
            for k, p in dag_params(PARAMS_SCHEMA).items()
        }
    )
    params.deep_merge(conf).validate()
