"""The DAGs as deployed: a running Airflow (api-server, scheduler, dag-processor, LocalExecutor)
schedules the archive DAG by itself, runs the catalog DAG on the archive's Asset event, and
runs a replay triggered through the REST API with Params; the target then holds exactly the
expected records."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka_archive.timeparse import format_ms
from kafka_archive_dev.demo import (
    DAG_ARCHIVE,
    DAG_CATALOG,
    DAG_REPLAY,
    PROGRESS_TOPIC,
    TOPIC,
    DemoPaths,
    airflow_env,
    catalog_offsets,
    expected_records,
    read_target,
    write_cluster,
)
from kafka_archive_dev.embedded_kafka import EmbeddedKafka

from tests.support.airflow_live import LiveAirflow

pytestmark = pytest.mark.slow


def test_dags_run_under_a_real_airflow_and_replay_through_the_rest_api(tmp_path: Path) -> None:
    paths = DemoPaths(tmp_path / "demo")
    cluster = write_cluster(paths)
    env = airflow_env(paths)
    env["KAFKA_ARCHIVE_SCHEDULE"] = "* * * * *"  # the scheduler starts it within a minute
    airflow = LiveAirflow(paths.airflow_home, env, paths.logs)
    airflow.start()
    try:
        archived = airflow.wait_for_success(DAG_ARCHIVE, 300, run_type="scheduled")
        assert archived["run_type"] == "scheduled"
        cataloged = airflow.wait_for_success(DAG_CATALOG, 300, run_type="asset_triggered")
        assert cataloged["state"] == "success"

        at = cluster.start_ms + (cluster.end_ms - cluster.start_ms) // 2
        offsets = catalog_offsets(paths, cluster, at)
        assert offsets and all(r["offset"] == r["broker_lookup_offset"] for r in offsets)
        partitions = sorted(r["partition"] for r in offsets)
        with EmbeddedKafka(3) as target:
            target.create_topic(TOPIC, len(partitions))
            target.create_topic(PROGRESS_TOPIC, 4)
            conf = {
                "cluster": "demo",
                "topic": TOPIC,
                "from": format_ms(at),
                "target": target.bootstrap_servers,
                "partition_mapping": "same",
            }
            run = airflow.request(
                "POST", f"/api/v2/dags/{DAG_REPLAY}/dagRuns", {"logical_date": None, "conf": conf}
            )
            airflow.wait_for_success(DAG_REPLAY, 300, run_id=run["dag_run_id"])
            got = read_target(target.bootstrap_servers, partitions)
        want = expected_records(paths, cluster, {r["partition"]: r["offset"] for r in offsets})
        assert sum(len(v) for v in want.values()) > 50
        assert got == want

        # Params are validated: a run with an invalid partition mapping is refused
        with pytest.raises(Exception) as refused:
            airflow.request(
                "POST",
                f"/api/v2/dags/{DAG_REPLAY}/dagRuns",
                {"logical_date": None, "conf": {**conf, "partition_mapping": "x"}},
            )
        assert "400" in str(refused.value) or "422" in str(refused.value)
    finally:
        airflow.stop()
