"""The browser tests' stack, shared by tests/ui/test_browser.py (the runbook scenarios) and
tests/ui/test_browser_page.py (links, topic switching, errors, the chart, dark mode) when they
run in one session: ``airflow standalone`` with the repository's plugins over the demo's data,
and librdkafka's mock cluster as the replay target (also as the Airflow connection
``kafka_target``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

#: the demo's writer steps: ~43 minutes of records ending a minute before they are written,
#: so that -40m, -30m and -10m all fall inside them while the tests run
DEMO_STEPS = 900
PROGRESS_TOPIC = "__kafka_archive_replay_progress"
#: the Airflow connection naming the replay target (AIRFLOW_CONN_KAFKA_TARGET)
TARGET_CONN = "kafka_target"
#: the target topic of the replay launched to that connection
CONN_TOPIC = "orders_via_conn"


def demo_catalog(root: Path, steps: int = DEMO_STEPS) -> tuple[Any, Any]:
    """The demo's data (``./dev demo``'s stage 1: a 3-broker cluster whose records end a
    minute ago), archived from every broker and cataloged in-process - what the demo's
    archive and catalog DAGs make, without running them."""
    from kafka_archive.archive import run_archive
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.store import open_store
    from kafka_archive_dev.demo import CLUSTER, DemoPaths, write_cluster

    paths = DemoPaths(root)
    cluster = write_cluster(paths, steps=steps)
    store = open_store(paths.store_uri)
    for broker, dirs in sorted(cluster.broker_dirs.items()):
        run_archive(cluster=CLUSTER, broker_id=broker, log_dirs=[str(d) for d in dirs], store=store)
    with open_catalog(paths.db_url, create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
    return paths, cluster


@contextmanager
def demo_airflow(root: Path, conn_id: str, bootstrap: str) -> Iterator[tuple[Any, Any, Any]]:
    """``(server, paths, cluster)``: ``airflow standalone`` (started, stopped on exit) over the
    demo's data under ``root``, with the Airflow connection ``conn_id`` naming the target
    cluster at ``bootstrap``. The data is written once Airflow is up: its records end a
    minute before the browser starts, so the scenarios' relative times fall inside them."""
    from browser_support import AirflowServer
    from kafka_archive_dev.demo import DemoPaths

    paths = DemoPaths(root / "demo")
    conn = {"conn_type": "generic", "host": bootstrap}
    server = AirflowServer(
        root / "airflow",
        {
            "KAFKA_ARCHIVE_DB": paths.db_url,
            "KAFKA_ARCHIVE_STORE": paths.store_uri,
            f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(conn),
        },
    )
    try:
        server.start()
        paths, cluster = demo_catalog(root / "demo")
        yield server, paths, cluster
    finally:
        server.stop()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from browser_support import require_browser
    from kafka_archive_dev.demo import TOPIC
    from kafka_archive_dev.embedded_kafka import EmbeddedKafka

    require_browser()
    root = tmp_path_factory.mktemp("browser")
    with (
        EmbeddedKafka(3) as target,
        demo_airflow(root, TARGET_CONN, target.bootstrap_servers) as (server, paths, cluster),
    ):
        partitions = sorted(p for (t, p) in cluster.replicas if t == TOPIC)
        target.create_topic(TOPIC, len(partitions))
        target.create_topic(CONN_TOPIC, len(partitions))
        # the mock cannot serve CreateTopics: the replay's progress topic is made up front
        target.create_topic(PROGRESS_TOPIC, 4)
        yield {"paths": paths, "cluster": cluster, "partitions": partitions,
               "server": server, "target": target}  # fmt: skip
