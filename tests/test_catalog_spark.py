"""The catalog build on Spark: executors read their objects from a real S3 endpoint (moto) with
ranged reads and produce exactly what the in-process build produces; the same job file runs
unchanged through ``spark-submit`` on a real standalone cluster; and the Airflow DAG runs it
both ways (``dag.test()``)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.airflow.catalog_tasks import (
    CatalogJobConfig,
    CatalogJobError,
    default_application,
    load_catalog_config,
    spark_submit_command,
    spark_submit_env,
)
from kafka_archive.archive import run_archive
from kafka_archive.catalog.build import InProcessRunner, build_catalog
from kafka_archive.catalog.db import open_catalog
from kafka_archive.catalog.queries import offsets_for_time
from kafka_archive.spark.session import SparkRunner
from kafka_archive.store import ObjectStore, open_store
from support.catalog_data import (
    History,
    all_records,
    brute_force_offset,
    dump_catalog,
    sample_times,
    write_history,
)
from support.s3common import unique_prefix

pytest_plugins = ["support.spark", "support.s3server"]

REPO = Path(__file__).resolve().parents[1]
C = "c1"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> History:
    return write_history(tmp_path_factory.mktemp("spark-hist") / "logs", seed=21, appends=90)


@pytest.fixture(scope="module")
def local_archive(history: History, tmp_path_factory: pytest.TempPathFactory) -> str:
    store = open_store(str(tmp_path_factory.mktemp("spark-store")))
    run_archive(
        cluster=C, broker_id=1, log_dirs=[str(d) for d in history.broker.log_dirs], store=store
    )
    return store.uri


def _reference(
    store_uri: str, tmp: Path, interval_bytes: int = 800, **options: Any
) -> dict[str, list[tuple[Any, ...]]]:
    db = tmp / f"reference-{interval_bytes}.db"
    db.unlink(missing_ok=True)
    with open_catalog(db, create=True) as ref:
        build_catalog(
            ref,
            store_uri,
            runner=InProcessRunner(),
            interval_bytes=interval_bytes,
            store_options=options,
        )
        dumped: dict[str, list[tuple[Any, ...]]] = dump_catalog(ref)
        return dumped


def test_spark_executors_read_s3_and_match_the_in_process_build(
    spark: Any, moto_s3: Any, aws_env: None, history: History, tmp_path: Path
) -> None:
    uri = f"s3://{moto_s3.bucket}/{unique_prefix('catalog')}"
    options = {"endpoint_url": moto_s3.endpoint_url, "region": "us-east-1"}
    store: ObjectStore = open_store(uri, **options)
    run_archive(
        cluster=C, broker_id=1, log_dirs=[str(d) for d in history.broker.log_dirs], store=store
    )
    with open_catalog(tmp_path / "spark.db", create=True) as cat:
        report = build_catalog(
            cat,
            uri,
            runner=SparkRunner(spark),
            interval_bytes=800,
            store_options=options,
            wave_segments=12,
        )
        assert report.failed == [] and report.segments_added == report.manifests > 10
        assert report.bytes_read == sum(
            s.stat().st_size
            for d in history.dirs.values()
            for s in d.glob("*.log")
            if s.stat().st_size
        )
        assert dump_catalog(cat) == _reference(uri, tmp_path, **options)
        again = build_catalog(cat, uri, runner=SparkRunner(spark), store_options=options)
        assert again.segments_added == 0 and again.bytes_read == 0
        rng = random.Random(4)
        for topic, part in (("orders", 0), ("events", 1)):
            recs = list(all_records(history.dirs[(topic, part)]))
            for ts in sample_times(recs, rng, 8):
                (ans,) = offsets_for_time(cat, store, C, topic, ts, [part])
                assert (ans.offset, ans.timestamp) == brute_force_offset(recs, ts)


def _dag_test(tmp_path: Path, runs: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Run ``dag.test()`` of the catalog DAG once per entry of ``runs`` (environment for that
    run), in one fresh process with its own AIRFLOW_HOME and metadata database."""
    home = tmp_path / "airflow"
    full = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
        # where spark-submit finds spark_jobs/build_catalog.py (the image sets /opt/kafka-archive)
        "KAFKA_ARCHIVE_HOME": str(REPO),
    }
    code = textwrap.dedent(
        """
        import importlib.util, json, os, subprocess, sys
        subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], check=True,
                       capture_output=True)
        spec = importlib.util.spec_from_file_location("catalog_dag", sys.argv[1])
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for env in json.loads(sys.argv[2]):
            os.environ.update(env)  # the tasks read their configuration when they run
            run = mod.DAG.test()
            tis = run.get_task_instances()
            states = {ti.task_id: str(ti.state) for ti in tis}
            rep = [ti for ti in tis if ti.task_id == "report"][0]
            print("RESULT " + json.dumps({"state": str(run.state), "tasks": states,
                                          "report": rep.xcom_pull(task_ids="report")}),
                  flush=True)
        """
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(REPO / "dags" / "kafka_archive_catalog.py"),
            json.dumps(runs),
        ],
        env=full,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    out = [json.loads(line[7:]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if len(out) != len(runs):
        raise AssertionError(f"dag.test() failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return out


def test_dag_runs_in_process_and_submits_the_job_to_a_cluster(
    spark_cluster: str, local_archive: str, tmp_path: Path
) -> None:
    """The DAG builds in its task with a local Spark session (engine ``spark``, local master),
    with spark-submit of ``spark_jobs/build_catalog.py`` (unchanged) when a cluster master is
    configured, and, under the default ``auto`` with a cluster master, builds this small
    increment in its own process without submitting anything; all three give exactly the
    catalog the in-process reference build gives."""
    local_db, cluster_db = tmp_path / "dag-local.db", tmp_path / "dag-cluster.db"
    auto_db = tmp_path / "dag-auto.db"
    base = {"KAFKA_ARCHIVE_STORE": local_archive, "KAFKA_ARCHIVE_CATALOG_ENGINE": "spark"}
    local, submitted, auto = _dag_test(
        tmp_path,
        [
            {**base, "KAFKA_ARCHIVE_DB": str(local_db), "KAFKA_ARCHIVE_SPARK_MASTER": "local[1]"},
            {
                **base,
                "KAFKA_ARCHIVE_DB": str(cluster_db),
                "KAFKA_ARCHIVE_SPARK_MASTER": spark_cluster,
            },
            {
                **base,
                "KAFKA_ARCHIVE_CATALOG_ENGINE": "auto",
                "KAFKA_ARCHIVE_DB": str(auto_db),
                "KAFKA_ARCHIVE_SPARK_MASTER": spark_cluster,
            },
        ],
    )
    assert local["state"] == submitted["state"] == auto["state"] == "success"
    assert (local["tasks"]["build_local"], local["tasks"]["spark_submit"]) == ("success", "skipped")
    for result in (submitted, auto):
        assert (result["tasks"]["build_local"], result["tasks"]["spark_submit"]) == (
            "skipped",
            "success",
        )
    for result in (local, submitted, auto):
        assert result["report"]["segments_added"] > 10 and result["report"]["failed"] == 0
    assert local["report"]["engine"] == submitted["report"]["engine"] == "spark"
    assert auto["report"]["engine"] == "in-process"
    assert "below the Spark threshold" in auto["report"]["engine_reason"]
    reference = _reference(local_archive, tmp_path, interval_bytes=1 << 20)
    for db in (local_db, cluster_db, auto_db):
        with open_catalog(db, create=True) as cat:
            assert dump_catalog(cat) == reference


def test_spark_submit_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_ARCHIVE_HOME", str(REPO))  # as the image sets /opt/kafka-archive
    cfg = CatalogJobConfig(
        store_uri="s3://b/p",
        db_url="postgresql://u@h/db",
        spark_master="spark://m:7077",
        cluster="prod",
        spark_conf={"spark.executor.memory": "4g"},
        py_files="/x.zip",
    )
    cmd = spark_submit_command(cfg)
    assert cmd[0].endswith("spark-submit")
    assert cmd[cmd.index("--master") + 1] == "spark://m:7077"
    assert "spark.executor.memory=4g" in cmd and "/x.zip" in cmd
    app = next(c for c in cmd if c.endswith("build_catalog.py"))
    assert Path(app) == REPO / "spark_jobs" / "build_catalog.py"
    assert cmd[cmd.index("--cluster") + 1] == "prod"
    # the catalog URL (it may hold a password) travels in the environment only
    assert not any("postgresql" in c for c in cmd) and "--db" not in cmd
    env = spark_submit_env(cfg, {"PATH": "/bin"})
    assert env["KAFKA_ARCHIVE_DB"] == "postgresql://u@h/db" and env["PATH"] == "/bin"
    assert CatalogJobConfig(store_uri="x", db_url="y").mode() == "local"
    assert CatalogJobConfig(store_uri="x", db_url="y", spark_master="local[4]").mode() == "local"


def test_default_application_is_the_job_under_kafka_archive_home(tmp_path: Path) -> None:
    """The platform image installs the jobs under $KAFKA_ARCHIVE_HOME (a source checkout is
    such a home too)."""
    job = tmp_path / "spark_jobs" / "build_catalog.py"
    job.parent.mkdir()
    job.write_text("# the job\n")
    assert default_application({"KAFKA_ARCHIVE_HOME": str(tmp_path)}) == job
    assert default_application({"KAFKA_ARCHIVE_HOME": str(REPO)}) == (
        REPO / "spark_jobs" / "build_catalog.py"
    )


@pytest.mark.parametrize("home", [None, "", "nowhere"])
def test_default_application_not_configured_says_what_to_set(
    tmp_path: Path, home: str | None
) -> None:
    """Without $KAFKA_ARCHIVE_HOME (or with one that holds no job) the package does not guess
    from where it is installed (it once walked up from its own file to a source checkout, which
    an installed wheel does not have): the error says what to set."""
    env = {} if home is None else {"KAFKA_ARCHIVE_HOME": home and str(tmp_path / home)}
    with pytest.raises(CatalogJobError, match=r"KAFKA_ARCHIVE_HOME.*application"):
        default_application(env)


def test_job_config_takes_the_environment_over_the_variable() -> None:
    """The one precedence of kafka_archive.settings: environment > Airflow Variable."""
    env = {"KAFKA_ARCHIVE_STORE": "file:///a", "KAFKA_ARCHIVE_DB": "/c.db"}
    cfg = load_catalog_config(None, env)
    assert (cfg.store_uri, cfg.db_url, cfg.spark_master) == ("file:///a", "/c.db", None)
    cfg = load_catalog_config('{"db_url": "postgresql://x/y", "spark_master": "spark://m:1"}', env)
    assert (cfg.store_uri, cfg.db_url, cfg.mode()) == ("file:///a", "/c.db", "submit")
    with pytest.raises(CatalogJobError, match="store_uri"):
        load_catalog_config(None, {})


def test_dag_structure() -> None:
    """Parsing the DAG does no work and it is scheduled on the archive's Asset."""
    import importlib.util

    from kafka_archive.archive import ARCHIVE_SEGMENTS_ASSET_URI

    spec = importlib.util.spec_from_file_location(
        "catalog_dag_parse", REPO / "dags" / "kafka_archive_catalog.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dag = mod.DAG
    assert dag.dag_id == "kafka_archive_catalog"
    assert {"kafka-archive", "catalog"} <= set(dag.tags)
    assert dag.doc_md and "spark_submit" in dag.doc_md
    condition = dag.timetable.asset_condition
    assert [a.uri for a in condition.objects] == [ARCHIVE_SEGMENTS_ASSET_URI]
    assert set(dag.task_ids) == {"choose", "build_local", "spark_submit", "report"}
    assert all(t.retries >= 1 for t in dag.tasks)
