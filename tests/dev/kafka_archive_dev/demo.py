"""The end-to-end demo behind ``./dev demo`` (``kafka-archive-dev demo``).

Everything lives under one folder (default ``.work/demo``), nothing needs root or a network:

1. **cluster**: a realistic 3-broker Kafka log directory written by
   :func:`kafka_archive_dev.writer.write_demo_cluster` (several topics and partitions, every codec,
   transactions with commits and aborts, LogAppendTime, compaction, ``__consumer_offsets``
   commits, a crashed broker with a torn tail), its records stamped over the last half hour;
2. **archive**: the ``kafka_archive_segments`` DAG, run through Airflow (``airflow dags test``
   against the demo's own Airflow home and metadata DB), copies the rolled segments to a local
   object store;
3. **catalog**: the ``kafka_archive_catalog`` DAG builds the SQLite catalog (in its task's
   process: the engine ``auto`` finds the demo's increment far below the Spark threshold);
4. **replay**: an embedded Kafka-protocol target (librdkafka's mock cluster) is started in this
   process and the ``kafka_archive_replay`` DAG replays topic ``orders`` from time T into it;
5. **answers**: the catalog's "offsets of orders at T" (checked against the broker-equivalent
   lookup on the original log dirs), a consumer group's committed position at T from the
   archived ``__consumer_offsets``, and a verification that the target holds exactly the
   expected records (keys, values, headers, timestamps, partitions, order).

Each stage is a function, so tests can run them one by one;
:func:`kafka_archive_dev.demo_run.run_demo` runs them all (on real Kafka, or here,
:func:`run_mock`, without Java) and returns a JSON-ready report.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka_archive.errors import KafkaArchiveError

from kafka_archive_dev import REPO_ROOT, repo_path
from kafka_archive_dev.writer import DemoCluster, write_demo_cluster
from segment_lib.log_file import open_log
from segment_lib.lookup import find_offset_for_timestamp
from segment_lib.partition import PartitionView

__all__ = ["DemoError", "DemoPaths"]

CLUSTER = "demo"
TOPIC = "orders"
DAG_ARCHIVE = "kafka_archive_segments"
DAG_CATALOG = "kafka_archive_catalog"
DAG_REPLAY = "kafka_archive_replay"
#: the DAG whose runs move a consumer group on a replay's target (the page's "Apply")
DAG_GROUP_OFFSETS = "kafka_archive_group_offsets"
PROGRESS_TOPIC = "__kafka_archive_replay_progress"


class DemoError(KafkaArchiveError, RuntimeError):
    """A demo stage failed; the message says which and where its log is."""


@dataclass(frozen=True, slots=True)
class DemoPaths:
    """Where the demo keeps things, all under ``root`` (made absolute here: the store's
    ``file://`` URI, the catalog's URL and Airflow's home must name the same folder from
    every process, whatever its working directory)."""

    root: Path

    def __post_init__(self) -> None:
        # `./dev demo`'s default root is relative (.work/demo); a file URI cannot be
        object.__setattr__(self, "root", self.root.resolve())

    @property
    def cluster(self) -> Path:
        return self.root / "cluster"

    @property
    def store(self) -> Path:
        return self.root / "store"

    @property
    def catalog_db(self) -> Path:
        return self.root / "catalog.sqlite"

    @property
    def airflow_home(self) -> Path:
        return self.root / "airflow"

    @property
    def config(self) -> Path:
        return self.root / "archive-config.json"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def store_uri(self) -> str:
        return self.store.as_uri()

    @property
    def db_url(self) -> str:
        return f"sqlite:///{self.catalog_db}"


def fresh_root(paths: DemoPaths) -> None:
    """An empty demo folder (a previous demo's is removed)."""
    if paths.root.exists():
        shutil.rmtree(paths.root)
    paths.logs.mkdir(parents=True)


def write_config(paths: DemoPaths, broker_dirs: dict[int, list[Path]]) -> None:
    """The archive DAG's configuration: one cluster, its brokers and their log dirs."""
    config = {
        "store_uri": paths.store_uri,
        "state_dir": str(paths.root / "archive-state"),
        "clusters": [
            {
                "name": CLUSTER,
                "brokers": [
                    {"id": b, "log_dirs": [str(d) for d in dirs]}
                    for b, dirs in sorted(broker_dirs.items())
                ],
            }
        ],
    }
    paths.config.write_text(json.dumps(config, indent=2))


def write_cluster(
    paths: DemoPaths, *, seed: int = 0, now_ms: int | None = None, steps: int = 400
) -> DemoCluster:
    """Stage 1 without Java: a fresh demo folder and a writer-made cluster whose records end a
    minute ago. ``steps``: the writer's steps (about 3 s of records each: 400 span ~20 min)."""
    fresh_root(paths)
    paths.cluster.mkdir(parents=True)
    now = int(time.time() * 1000) if now_ms is None else now_ms
    probe = write_demo_cluster(paths.root / "probe", seed=seed, start_ms=0, steps=steps)
    shutil.rmtree(paths.root / "probe")
    start = now - 60_000 - (probe.end_ms - probe.start_ms)
    cluster = write_demo_cluster(paths.cluster, seed=seed, start_ms=start, steps=steps)
    write_config(paths, cluster.broker_dirs)
    return cluster


def airflow_env(paths: DemoPaths) -> dict[str, str]:
    """The environment of the demo's own Airflow (home, SQLite metadata DB, our DAGs)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        AIRFLOW_HOME=str(paths.airflow_home),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW__CORE__DAGS_FOLDER=str(repo_path("dags")),
        AIRFLOW__CORE__PLUGINS_FOLDER=str(repo_path("plugins")),
        AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=f"sqlite:///{paths.airflow_home / 'airflow.db'}",
        # where a spark-submit finds spark_jobs/ (as the platform image sets /opt/kafka-archive)
        KAFKA_ARCHIVE_HOME=str(REPO_ROOT),
        KAFKA_ARCHIVE_CONFIG=str(paths.config),
        KAFKA_ARCHIVE_STORE=paths.store_uri,
        KAFKA_ARCHIVE_DB=paths.db_url,
        KAFKA_ARCHIVE_SPARK_MASTER="local[2]",
        PYSPARK_PYTHON=sys.executable,
    )
    return env


#: the demo's Airflow login for the on-call page (`./dev demo --ui`)
UI_USER = "oncall"
#: the Airflow connection of the live target `demo --ui` starts for replays from the page
UI_TARGET_CONN = "demo_target"
#: the replay topic made ready on a mock target (librdkafka's mock cannot create topics)
UI_REPLAY_TOPIC = "orders-replayed"


def ui_command(
    root: Path, port: int, target_bootstrap: str | None = None
) -> tuple[list[str], dict[str, str]]:
    """``airflow standalone`` over the demo under ``root`` (its metadata DB, DAGs, plugins -
    the on-call page at ``/kafka-archive/`` - and settings), listening on ``port``, with one
    admin user :data:`UI_USER` (Airflow generates the password into
    ``<root>/airflow/simple_auth_manager_passwords.json.generated``) and, given
    ``target_bootstrap``, the connection :data:`UI_TARGET_CONN` to it."""
    paths = DemoPaths(root)
    bin_dir = str(Path(sys.executable).parent)
    env = airflow_env(paths) | {
        # standalone starts its components as `airflow ...` from PATH: this environment's
        "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__API__BASE_URL": f"http://localhost:{port}",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{UI_USER}:admin",
    }
    if target_bootstrap:
        conn = {"conn_type": "generic", "host": target_bootstrap}
        env[f"AIRFLOW_CONN_{UI_TARGET_CONN.upper()}"] = json.dumps(conn)
    return [str(Path(sys.executable).with_name("airflow")), "standalone"], env


@contextlib.contextmanager
def ui_target(root: Path, kafka: str = "auto") -> Iterator[str]:
    """A live Kafka cluster for replays launched from the page, for as long as the block runs
    (the demo's own clusters are stopped when it ends): one real broker under
    ``<root>/kafka-ui-target`` where Java and Maven are present (``kafka``: as for
    :func:`run_demo`), else librdkafka's mock cluster in this process with
    :data:`UI_REPLAY_TOPIC` and the replay's progress topic made ready. Yields its bootstrap
    servers."""
    from kafka_archive_dev.local_kafka import kafka_unavailable_reason

    if kafka == "real" or (kafka == "auto" and kafka_unavailable_reason() is None):
        from kafka_archive_dev.local_kafka import LocalKafkaCluster

        real = LocalKafkaCluster(root / "kafka-ui-target", brokers=1)
        real.start()
        try:
            yield real.bootstrap_servers
        finally:
            real.stop()
        return
    from kafka_archive_dev.embedded_kafka import EmbeddedKafka

    with EmbeddedKafka(1) as mock:
        mock.create_topic(UI_REPLAY_TOPIC, 3)
        mock.create_topic(PROGRESS_TOPIC, 4)
        yield mock.bootstrap_servers


def serve_ui(root: Path, port: int, kafka: str = "auto") -> int:
    """Unpause the replay and group-offsets DAGs, then run :func:`ui_command` in the foreground with
    :func:`ui_target` live, until it ends (Ctrl-C); its exit status."""
    paths = DemoPaths(root)
    # the DAGs the page triggers must be known and unpaused for its runs to start
    _airflow(paths, "ui-reserialize", "dags", "reserialize")
    for dag_id in (DAG_REPLAY, DAG_GROUP_OFFSETS):
        _airflow(paths, f"ui-unpause-{dag_id}", "dags", "unpause", dag_id)
    with ui_target(root, kafka) as bootstrap:
        argv, env = ui_command(root, port, bootstrap)
        try:
            return subprocess.run(argv, env=env, check=False).returncode
        except KeyboardInterrupt:
            return 0


def _airflow(paths: DemoPaths, name: str, *args: str) -> None:
    """Run one ``airflow`` command for the demo; its output goes to ``logs/<name>.log``."""
    log = paths.logs / f"{name}.log"
    exe = Path(sys.executable).with_name("airflow")
    if not exe.exists():  # the core install has no Airflow: say which extra brings it
        raise DemoError(
            "the demo runs its DAGs through Airflow: it needs "
            "`pip install kafka-archive[airflow]` (no airflow command next to this Python)"
        )
    with log.open("w") as out:
        proc = subprocess.run(
            [str(exe), *args],
            env=airflow_env(paths),
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=1800,
            check=False,
        )
    text = log.read_text(errors="replace")
    failed = proc.returncode != 0 or (args[:2] == ("dags", "test") and "state=success" not in text)
    if failed:
        tail = "\n".join(text.splitlines()[-25:])
        raise DemoError(f"`airflow {' '.join(args[:3])}` failed; full log: {log}\n{tail}")


def run_archive_and_catalog(paths: DemoPaths) -> None:
    """Stages 2-3: Airflow's metadata DB, then the archive and catalog DAGs."""
    paths.airflow_home.mkdir(parents=True, exist_ok=True)
    _airflow(paths, "airflow-db-migrate", "db", "migrate")
    _airflow(paths, "dag-archive", "dags", "test", DAG_ARCHIVE)
    _airflow(paths, "dag-catalog", "dags", "test", DAG_CATALOG)


def run_replay(
    paths: DemoPaths, bootstrap: str, from_ms: int, *, create_topic: bool = False
) -> None:
    """Stage 4: the replay DAG, with Params, into the target (``create_topic``: the replay
    creates the target topic with the source's partition count)."""
    from kafka_archive.timeparse import format_ms

    conf = {
        "cluster": CLUSTER,
        "topic": TOPIC,
        "from": format_ms(from_ms),
        "to": None,
        "target": bootstrap,
        "partition_mapping": "same",
        "preserve_timestamps": True,
        "create_topic": create_topic,
    }
    _airflow(paths, "dag-replay", "dags", "test", DAG_REPLAY, "-c", json.dumps(conf))


def _leader_dir(cluster: DemoCluster, topic: str, partition: int) -> Path:
    leader = cluster.replicas[(topic, partition)][0]
    for log_dir in cluster.broker_dirs[leader]:
        if (log_dir / f"{topic}-{partition}").is_dir():
            return log_dir / f"{topic}-{partition}"
    raise DemoError(f"no directory for {topic}-{partition} on broker {leader}")


def _catalog_answers(paths: DemoPaths, at_ms: int) -> list[dict[str, Any]]:
    """The catalog's ListOffsets answer for the demo topic at ``at_ms``, per partition."""
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.catalog.queries import offsets_for_time
    from kafka_archive.store import open_store

    catalog = open_catalog(paths.db_url)
    store = open_store(paths.store_uri)
    return [
        {"partition": a.partition, "offset": a.offset, "timestamp": a.timestamp}
        for a in offsets_for_time(catalog, store, CLUSTER, TOPIC, at_ms)
    ]


def catalog_offsets(paths: DemoPaths, cluster: DemoCluster, at_ms: int) -> list[dict[str, Any]]:
    """The catalog's ListOffsets answer at ``at_ms`` beside segment_lib's lookup on the leader's
    original log dir (what the broker itself would have answered)."""
    return [
        {
            **row,
            "broker_lookup_offset": find_offset_for_timestamp(
                PartitionView.open(_leader_dir(cluster, TOPIC, row["partition"])), at_ms
            ).offset,
        }
        for row in _catalog_answers(paths, at_ms)
    ]


def group_position_at(paths: DemoPaths, group: str, at_ms: int) -> dict[str, Any]:
    """Group ``group``'s committed offsets at ``at_ms`` according to the catalog."""
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.catalog.queries import CatalogQueryError, group_offsets

    try:
        rows = group_offsets(open_catalog(paths.db_url), CLUSTER, group, at_ms)
    except CatalogQueryError as exc:
        raise DemoError(f"group {group} at {at_ms}: {exc}") from exc
    return {"group": group, "at": at_ms, "offsets": [r.to_json() for r in rows]}


def group_position(paths: DemoPaths, cluster: DemoCluster, at_ms: int) -> dict[str, Any]:
    """A consumer group's committed offsets at ``at_ms``, from the archived commits (the first
    demo group, by name, that had committed by then)."""
    for group in sorted(cluster.committed):
        try:
            answer = group_position_at(paths, group, at_ms)
        except DemoError:
            continue
        if answer["offsets"]:
            return answer
    raise DemoError(f"no demo group had archived commits at {at_ms}")


def _archived_ends(paths: DemoPaths) -> dict[int, int]:
    """Per partition of the demo topic, the end offset of what was archived."""
    from kafka_archive.archive import iter_manifests
    from kafka_archive.store import open_store

    ends: dict[int, int] = {}
    for m in iter_manifests(open_store(paths.store_uri), CLUSTER, TOPIC):
        ends[m.partition] = max(ends.get(m.partition, 0), m.end_offset)
    return ends


Expected = dict[int, list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]]]


def expected_records(paths: DemoPaths, cluster: DemoCluster, starts: dict[int, int]) -> Expected:
    """What the target must hold: every record of ``orders`` from each partition's start offset
    to the end of what was archived, read from the original log dirs."""
    ends = _archived_ends(paths)
    out: Expected = {}
    for partition, start in starts.items():
        rows = out.setdefault(partition, [])
        if start < 0:
            continue
        view = PartitionView.open(_leader_dir(cluster, TOPIC, partition))
        for seg in view.segments:
            with open_log(seg.log) as log:
                for _batch, r in log.iter_records(allow_torn_tail=view.is_active(seg)):
                    if start <= r.offset < ends.get(partition, 0):
                        rows.append(
                            (r.key, r.value, [(h.key, h.value) for h in r.headers], r.timestamp)
                        )
    return out


def read_target(
    bootstrap: str, partitions: list[int], timeout_s: float = 30.0, *, topic: str = TOPIC
) -> Expected:
    """Everything the target's ``topic`` partitions hold, in order, via a confluent consumer."""
    from kafka_archive_dev.embedded_kafka import read_to_end

    got = read_to_end(bootstrap, topic, partitions, timeout_s=timeout_s)
    return {
        p: [(r.key, r.value, list(r.headers), r.timestamp) for r in records]
        for p, records in got.items()
    }


def run_mock(paths: DemoPaths, seed: int, say: Callable[[str], None]) -> dict[str, Any]:
    """The Java-free demo: a writer-made source cluster, librdkafka's mock as the target."""
    from kafka_archive_dev.embedded_kafka import EmbeddedKafka

    started = time.monotonic()
    say(f"writing a 3-broker Kafka log directory under {paths.cluster}")
    cluster = write_cluster(paths, seed=seed)
    say("archive DAG, then catalog DAG (through Airflow)")
    run_archive_and_catalog(paths)
    at = cluster.start_ms + (cluster.end_ms - cluster.start_ms) // 2
    offsets = catalog_offsets(paths, cluster, at)
    group = group_position(paths, cluster, at)
    partitions = sorted(p for (t, p) in cluster.replicas if t == TOPIC)
    with EmbeddedKafka(3) as target:
        target.create_topic(TOPIC, len(partitions))
        # the mock cannot serve CreateTopics: make the replay's progress topic up front
        target.create_topic(PROGRESS_TOPIC, 4)
        say(f"replay DAG: {TOPIC} from {at} into the embedded target {target.bootstrap_servers}")
        run_replay(paths, target.bootstrap_servers, at)
        got = read_target(target.bootstrap_servers, partitions)
        target_servers = target.bootstrap_servers
    want = expected_records(paths, cluster, {r["partition"]: r["offset"] for r in offsets})
    return _report(
        paths,
        started,
        topics=sorted(cluster.topics),
        at=at,
        offsets=offsets,
        # the writer keeps only each group's last commit: the catalog's position at T must be
        # one committed by T, and not past where the group ended up
        group={**group, "matches": _plausible_group(group, cluster, at)},
        want=want,
        got=got,
        kafka="",
        target=target_servers,
        metadata={"history": False, "changed_at": 0},
        end=cluster.end_ms,
    )


def _plausible_group(group: dict[str, Any], cluster: DemoCluster, at_ms: int) -> bool:
    final = cluster.committed[group["group"]]
    return bool(group["offsets"]) and all(
        o["commit_timestamp"] <= at_ms and o["offset"] <= final[(o["topic"], o["partition"])]
        for o in group["offsets"]
    )


def _report(
    paths: DemoPaths,
    started: float,
    *,
    topics: list[str],
    at: int,
    offsets: list[dict[str, Any]],
    group: dict[str, Any],
    want: Expected,
    got: Expected,
    kafka: str,
    target: str,
    metadata: dict[str, Any],
    end: int,
) -> dict[str, Any]:
    """The demo's report (also written to ``<root>/report.json``); ``target``: the replay
    target's servers, ``metadata``: whether the metadata log was archived (``history``) and
    when the demo changed it (``changed_at``), ``end``: the last record's time."""
    mismatched = [p for p in sorted(want) if got.get(p, []) != want.get(p, [])]
    report = {
        "root": str(paths.root),
        "cluster": CLUSTER,
        "kafka": kafka,
        "topics": topics,
        "offsets_at": {"topic": TOPIC, "timestamp": at, "partitions": offsets},
        "catalog_matches_broker": all(r["offset"] == r["broker_lookup_offset"] for r in offsets),
        "group_position": group,
        "replay": {
            "records_expected": sum(len(v) for v in want.values()),
            "records_in_target": sum(len(v) for v in got.values()),
            "partitions_mismatched": mismatched,
            "exact": not mismatched,
        },
        "seconds": round(time.monotonic() - started, 1),
        "logs": str(paths.logs),
        "store": paths.store_uri,
        "db": paths.db_url,
        "target": target,
        "metadata": metadata,
        "end": end,
    }
    (paths.root / "report.json").write_text(json.dumps(report, indent=2))
    return report
