"""The ``kafka_archive_segments`` DAG run through ``dag.test()`` in an isolated Airflow.

One Airflow subprocess runs the DAG three times against a three-broker cluster (brokers 2 and 3
on their own worker queues, broker 1 on the default queue, so every queue group of the DAG is
exercised): a first run archives everything and emits the Asset event; a second run archives
nothing and emits none; after the brokers rolled new segments, one of which is corrupt, a third
run archives the good ones (event emitted), quarantines the bad one and fails that log dir's
archive task, the report task and the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from archive_checks import check_archive, eligible_segments
from cluster_data import CLUSTER, Cluster
from kafka_archive.archive import ARCHIVE_SEGMENTS_ASSET_URI, iter_manifests
from kafka_archive.store import LocalStore

if TYPE_CHECKING:
    from support.airflow import AirflowHome

pytest_plugins = ["support.airflow"]

HERE = Path(__file__).resolve().parent

SNIPPET = """
import json, sys
from pathlib import Path
sys.path.insert(0, {here!r})
from airflow.dag_processing.dagbag import DagBag
from airflow.models.asset import AssetEvent, AssetModel
from airflow.utils.session import create_session
from segment_lib.log_file import iter_batches
from cluster_data import build_cluster, rolled_segments, sync_tree
from kafka_archive.store import open_store

store = open_store({store_uri!r})

bag = DagBag(dag_folder={dags!r})
assert not bag.import_errors, bag.import_errors
dag = bag.get_dag("kafka_archive_segments")
out = {{"tasks": {{t.task_id: t.queue for t in dag.tasks}}, "runs": []}}

def run():
    dr = dag.test()
    states = {{f"{{ti.task_id}}[{{ti.map_index}}]": str(getattr(ti.state, "value", ti.state))
              for ti in dr.get_task_instances()}}
    with create_session() as s:
        events = [
            {{"uri": uri, "extra": e.extra, "run_id": e.source_run_id}}
            for e, uri in s.query(AssetEvent, AssetModel.uri)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .filter(AssetEvent.source_run_id == dr.run_id)
        ]
    manifests = sorted(o.key for o in store.list("") if "/manifests/" in o.key)
    state = str(getattr(dr.state, "value", dr.state))
    out["runs"].append(
        {{"state": state, "tasks": states, "events": events, "manifests": manifests}}
    )

run()
run()
# the brokers roll new segments; one of broker 2's new payments segments is corrupt
live = Path({live!r})
sync_tree(build_cluster(Path({scratch!r}), phase=2).root, live)
seg = rolled_segments(live / "broker-2/data/payments-0")[-1][2]  # rolled since run 2
data = bytearray(seg.read_bytes())
b = list(iter_batches(bytes(data)))[0]
data[b.position + b.size - 2] ^= 0x41
seg.write_bytes(bytes(data))
out["corrupt"] = {{"path": str(seg), "position": b.position}}
run()
print("RESULT " + json.dumps(out))
"""


def _config(cluster: Cluster, store_uri: str, state_dir: Path) -> dict[str, Any]:
    brokers = [
        {"id": 1, "log_dirs": cluster.dirs(1)},
        {"id": 2, "log_dirs": cluster.dirs(2), "queue": "kafka-broker-2"},
        {"id": 3, "log_dirs": cluster.dirs(3), "queue": "kafka-broker-3"},
    ]
    return {
        "store_uri": store_uri,
        "concurrency": 2,
        "state_dir": str(state_dir),
        "clusters": [{"name": CLUSTER, "brokers": brokers}],
    }


def test_dag_runs_archive_report_and_emit_the_asset(
    airflow_home: AirflowHome, cluster: Cluster, local_store: LocalStore, tmp_path: Path
) -> None:
    from support.airflow import run_airflow_python

    config_file = tmp_path / "kafka-archive.yaml"
    config_file.write_text(yaml.safe_dump(_config(cluster, local_store.uri, tmp_path / "state")))
    out = run_airflow_python(
        airflow_home,
        SNIPPET.format(
            here=str(HERE),
            dags=str(Path(airflow_home.env["AIRFLOW__CORE__DAGS_FOLDER"])),
            live=str(cluster.root),
            scratch=str(tmp_path / "phase2"),
            store_uri=local_store.uri,
        ),
        extra_env={"KAFKA_ARCHIVE_CONFIG": str(config_file)},
    )
    # one mapped discover/archive pair per worker queue, each sent to its queue
    queues = out["tasks"]
    assert queues["discover__q_kafka_broker_2"] == "kafka-broker-2"
    assert queues["archive__q_kafka_broker_3"] == "kafka-broker-3"
    assert {"targets", "plan", "report", "publish", "discover", "archive"} <= set(queues)

    first, second, third = out["runs"]
    assert first["state"] == "success", first["tasks"]
    # broker 1 has 2 log dirs, brokers 2 and 3 one each: one mapped instance per log dir
    assert {k for k in first["tasks"] if k.startswith("archive")} == {
        "archive[0]",
        "archive[1]",
        "archive__q_kafka_broker_2[0]",
        "archive__q_kafka_broker_3[0]",
    }
    [event] = first["events"]
    assert event["uri"] == ARCHIVE_SEGMENTS_ASSET_URI
    assert sorted(event["extra"]["manifest_keys"]) == first["manifests"]
    assert event["extra"]["segments_archived"] == len(first["manifests"]) > 0

    assert second["state"] == "success", second["tasks"]
    assert second["tasks"]["publish[-1]"] == "skipped" and second["events"] == []
    assert second["manifests"] == first["manifests"]

    assert third["state"] == "failed"
    t = third["tasks"]
    assert t["archive__q_kafka_broker_2[0]"] == "failed"  # the log dir with the corrupt segment
    assert t["archive[0]"] == "success" and t["archive__q_kafka_broker_3[0]"] == "success"
    assert t["report[-1]"] == "failed"
    assert t["publish[-1]"] == "success"  # the good new segments are announced anyway
    [event3] = third["events"]
    new = sorted(set(third["manifests"]) - set(first["manifests"]))
    assert new and sorted(event3["extra"]["manifest_keys"]) == new
    # the corrupt segment is in quarantine with the file and byte position, not archived
    corrupt = out["corrupt"]
    records = [
        json.loads(local_store.get_bytes(o.key))
        for o in local_store.list(f"{CLUSTER}/_quarantine/")
        if o.key.endswith("/error.json")
    ]
    assert [(r["error"]["path"], r["error"]["position"]) for r in records] == [
        (corrupt["path"], corrupt["position"])
    ]
    assert not [
        m
        for m in iter_manifests(local_store, CLUSTER, "payments", 0)
        if m.source.partition_dir == "payments-0" and m.log_file.name == Path(corrupt["path"]).name
    ]
    # everything else is archived, once, byte for byte
    check_archive(local_store, cluster, CLUSTER, brokers=[1, 3])
    payments = [s for s in eligible_segments(cluster, [2]) if s[1] == "payments"]
    archived_pay = {m.base_offset for m in iter_manifests(local_store, CLUSTER, "payments", 0)}
    missing = [s for s in payments if s[3] not in archived_pay]
    assert [str(s[5]) for s in missing] == [corrupt["path"]]
