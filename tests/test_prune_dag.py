"""The ``kafka_archive_prune`` DAG in a real (isolated) Airflow: a dry run deletes nothing, a
real run prunes with the policies of the ``kafka_archive_retention`` setting, the next run
finds nothing more; schedule, Params and docs as declared."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.models import PrunedRange
from kafka_archive.store import open_store
from sqlalchemy import select
from support.catalog_data import archived_catalog

pytest_plugins = ["support.airflow"]

SNIPPET = """
import json
from airflow.dag_processing.dagbag import DagBag
from airflow.models.xcom import XComModel
from airflow.utils.session import create_session

bag = DagBag(dag_folder={dags!r})
assert not bag.import_errors, bag.import_errors
dag = bag.get_dag("kafka_archive_prune")
out = {{"runs": [], "params": sorted(dag.params), "schedule": str(dag.schedule),
        "tags": sorted(dag.tags), "doc": bool(dag.doc_md)}}

def run(**conf):
    dr = dag.test(run_conf=conf)
    with create_session() as s:
        rows = s.scalars(XComModel.get_many(run_id=dr.run_id, key="return_value",
                                            task_ids="prune", dag_ids=dag.dag_id)).all()
        result = XComModel.deserialize_value(rows[0]) if rows else None
    out["runs"].append({{"state": str(getattr(dr.state, "value", dr.state)), "result": result}})

run(dry_run=True)
run(dry_run=False)
run(dry_run=False, yes=True)
run(dry_run=False, yes=True)
print("RESULT " + json.dumps(out))
"""


def test_the_prune_dag_prunes_with_the_settings(airflow_home: Any, tmp_path: Path) -> None:
    from support.airflow import run_airflow_python

    _hist, store_uri, db = archived_catalog(tmp_path / "a", cluster="c1", appends=60)
    store = open_store(store_uri)
    keys_before = {o.key for o in store.list("")}
    policy = [{"name": "events-gone", "topic": "events", "max_bytes": 1}]
    with open_catalog(db) as cat, cat.session() as s:
        assert s.execute(select(PrunedRange)).first() is None
    out: dict[str, Any] = run_airflow_python(
        airflow_home,
        SNIPPET.format(dags=airflow_home.env["AIRFLOW__CORE__DAGS_FOLDER"]),
        extra_env={
            "KAFKA_ARCHIVE_STORE": store_uri,
            "KAFKA_ARCHIVE_DB": db,
            "KAFKA_ARCHIVE_RETENTION": json.dumps(policy),
        },
    )
    assert out["schedule"] == "@daily" and "retention" in out["tags"] and out["doc"]
    assert out["params"] == ["cluster", "dry_run", "topic", "yes"]
    dry, refused, real, again = out["runs"]
    assert [r["state"] for r in out["runs"]] == ["success", "failed", "success", "success"]
    # the whole topic would go: the dry run says a real run needs confirming, and a run
    # without the Param yes deletes nothing and fails
    assert [(x["topic"], x["percent"]) for x in dry["result"]["needs_confirmation"]] == [
        ("events", 100.0)
    ]
    assert refused["result"] is None
    assert dry["result"]["dry_run"] and dry["result"]["segments"] > 0
    assert {r["partition"] for r in dry["result"]["ranges"]} == {0, 1}
    assert real["result"]["segments"] == dry["result"]["segments"]
    assert real["result"]["bytes"] == dry["result"]["bytes"]
    assert again["result"]["segments"] == 0
    gone = keys_before - {o.key for o in store.list("")}
    assert gone and all("/events/" in k for k in gone)
    with open_catalog(db) as cat, cat.session() as s:
        rows = s.execute(select(PrunedRange)).scalars().all()
        assert sorted((r.partition, r.policy, r.status) for r in rows) == [
            (0, "events-gone", "done"),
            (1, "events-gone", "done"),
        ]
    store.close()
    shutil.rmtree(tmp_path / "a", ignore_errors=True)
