"""Spark for the tests: one local SparkSession per test session, and a real standalone cluster.

As a pytest plugin (``pytest_plugins = ["support.spark"]``):

* ``spark`` (session): a ``local[2]`` SparkSession made by the catalog's own
  :func:`~kafka_archive.spark.session.make_spark_session`. Its executors get fake AWS
  credentials (``spark.executorEnv.*``) so that they can read the tests' moto S3 server. It
  loads Iceberg's Spark runtime (``scripts/ensure-iceberg.sh``, resolved from Maven Central
  once) when Java and Maven are there: a JVM's classpath is fixed when it starts, and every
  test of a pytest run shares this one session.
* ``spark_cluster`` (session): a Spark standalone master and one worker (2 cores) started from
  the ``pyspark`` package's own ``spark-class`` on free ports of 127.0.0.1; yields the master
  URL (``spark://127.0.0.1:<port>``). Both processes are stopped at the end of the session.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from support.s3common import FAKE_ACCESS_KEY, FAKE_SECRET_KEY, REGION


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def iceberg_conf() -> dict[str, str]:
    """The session settings that load Iceberg (empty when its jars cannot be resolved)."""
    from kafka_archive.spark.iceberg import find_iceberg_jars, iceberg_session_conf

    script = Path(__file__).resolve().parents[2] / "scripts" / "ensure-iceberg.sh"
    try:
        out = subprocess.run(
            [str(script)], capture_output=True, text=True, timeout=900, check=True
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    jars = find_iceberg_jars(out.splitlines()[-1]) if out else []
    return iceberg_session_conf(jars) if jars else {}


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    from kafka_archive.spark.session import make_spark_session

    # py4j logs at INFO while the interpreter shuts down, after pytest closed the streams
    logging.getLogger("py4j").setLevel(logging.WARNING)
    session = make_spark_session(
        "local[2]",
        conf={
            "spark.executorEnv.AWS_ACCESS_KEY_ID": FAKE_ACCESS_KEY,
            "spark.executorEnv.AWS_SECRET_ACCESS_KEY": FAKE_SECRET_KEY,
            "spark.executorEnv.AWS_DEFAULT_REGION": REGION,
            "spark.executorEnv.AWS_EC2_METADATA_DISABLED": "true",
            "spark.executorEnv.NO_PROXY": "127.0.0.1,localhost",
            "spark.driver.host": "127.0.0.1",
            "spark.driver.bindAddress": "127.0.0.1",
            **iceberg_conf(),
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def _wait_for_worker(ui_port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as r:
                if json.load(r).get("aliveworkers", 0) >= 1:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError("the Spark worker did not register with the master")


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = _spark_home()
    spark_class = str(home / "bin" / "spark-class")
    logs = tmp_path_factory.mktemp("spark-cluster")
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_WORKER_DIR": str(logs / "work"),
    }
    port, ui = _free_port(), _free_port()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open(logs / "master.log", "wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.master.Master",
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(port),
                        "--webui-port",
                        str(ui),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            )
        url = f"spark://127.0.0.1:{port}"
        with open(logs / "worker.log", "wb") as out:
            procs.append(
                subprocess.Popen(
                    [
                        spark_class,
                        "org.apache.spark.deploy.worker.Worker",
                        url,
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "2",
                        "--memory",
                        "2g",
                        "--webui-port",
                        str(_free_port()),
                        "--work-dir",
                        str(logs / "work"),
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                )
            )
        _wait_for_worker(ui, time.monotonic() + 120)
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
