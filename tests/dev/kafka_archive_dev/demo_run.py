"""The demo's run (:func:`run_demo`), and the demo on real Apache Kafka (:func:`run_real`, what
``./dev demo`` runs where Java and Maven are; :func:`kafka_archive_dev.demo.run_mock` where they
are not): a 3-broker
source cluster (KRaft, its metadata log archivable: :data:`kafka_archive_dev.demo_live.
METADATA_LOG_CONFIG`), the demo's traffic through it with the offsets follower beside it, the
archive and catalog DAGs over its live log dirs, a replay DAG run into a 1-broker target, and
the report."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kafka_archive_dev.demo import (
    CLUSTER,
    TOPIC,
    DemoError,
    DemoPaths,
    _archived_ends,
    _catalog_answers,
    _report,
    fresh_root,
    group_position_at,
    read_target,
    run_archive_and_catalog,
    run_mock,
    run_replay,
    write_config,
)

__all__ = ["run_demo", "run_real"]


def run_demo(
    root: Path,
    *,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    kafka: str = "auto",
) -> dict[str, Any]:
    """Run every stage; returns the report (raises :class:`DemoError` on a failed stage).

    ``kafka``: ``real`` runs real Apache Kafka clusters (needs Java 17+ and Maven), ``mock``
    the Java-free fallback (a writer-made source and librdkafka's mock cluster as the target),
    ``auto`` real where Java and Maven are present, else the fallback (and the report says why).
    """
    from kafka_archive_dev.local_kafka import kafka_unavailable_reason

    say = progress or (lambda _msg: None)
    reason = kafka_unavailable_reason()
    if kafka == "real" or (kafka == "auto" and reason is None):
        return run_real(DemoPaths(root.resolve()), seed, say)
    note = f"mock Kafka ({reason or 'asked for'})"
    say(f"no real Kafka here: {note}; using a writer-made source and librdkafka's mock target")
    report = run_mock(DemoPaths(root.resolve()), seed, say)
    report["kafka"] = note
    return report


def run_real(paths: DemoPaths, seed: int, say: Callable[[str], None]) -> dict[str, Any]:
    """The demo on real Kafka: a 3-broker source cluster, a 1-broker target cluster."""
    from confluent_kafka import KafkaException

    from kafka_archive_dev.demo_live import (
        DEMO_TOPICS,
        METADATA_LOG_CONFIG,
        broker_offsets_for_time,
        produce_demo_data,
        wait_for_metadata_roll,
    )
    from kafka_archive_dev.embedded_kafka import read_to_end
    from kafka_archive_dev.local_kafka import DEFAULT_KAFKA_VERSION, LocalKafkaCluster

    started = time.monotonic()
    fresh_root(paths)
    partitions = list(range(DEMO_TOPICS[TOPIC][0]))
    source = LocalKafkaCluster(
        paths.root / "kafka-source", brokers=3, broker_config=METADATA_LOG_CONFIG
    )
    target = LocalKafkaCluster(paths.root / "kafka-target", brokers=1)
    try:
        say(f"starting a 3-broker Apache Kafka {DEFAULT_KAFKA_VERSION} cluster (KRaft)")
        source.start()
        say(
            f"producing the demo's traffic through it ({source.bootstrap_servers}), with the "
            "offsets follower reading __consumer_offsets into the catalog beside it"
        )
        with _offsets_follower(paths, source.bootstrap_servers):
            try:
                traffic = produce_demo_data(
                    source.bootstrap_servers, seed=seed, change_metadata_halfway=True
                )
            except KafkaException as exc:  # a client failure is the stage's, not a crash
                raise DemoError(f"producing the demo's traffic failed: {exc}") from None
        # the metadata log (each node's __cluster_metadata-0) is archived like any topic:
        # once it has rolled past the changes, the catalog has their history
        try:
            wait_for_metadata_roll(list(source.log_dirs.values()))
        except TimeoutError as exc:
            raise DemoError(str(exc)) from None
        write_config(paths, {b: [d] for b, d in source.log_dirs.items()})
        say("archive DAG over the brokers' live log dirs, then catalog DAG (through Airflow)")
        run_archive_and_catalog(paths)
        at = traffic.moments[len(traffic.moments) // 2]
        broker = broker_offsets_for_time(source.bootstrap_servers, TOPIC, len(partitions), at)
        offsets = [
            {**row, "broker_lookup_offset": broker[row["partition"]]}
            for row in _catalog_answers(paths, at)
        ]
        group = group_position_at(paths, "billing", at)
        want_group = traffic.group_at(at)
        say("starting a 1-broker target cluster")
        target.start()
        say(f"replay DAG: {TOPIC} from {at} into the target {target.bootstrap_servers}")
        run_replay(paths, target.bootstrap_servers, at, create_topic=True)
        got = read_target(target.bootstrap_servers, partitions)
        source_records = read_to_end(source.bootstrap_servers, TOPIC, partitions)
    finally:
        source.stop()
        target.stop()
    ends = _archived_ends(paths)
    starts = {r["partition"]: r["offset"] for r in offsets}
    want = {
        p: [
            (r.key, r.value, list(r.headers), r.timestamp)
            for r in source_records[p]
            if starts[p] >= 0 and starts[p] <= r.offset < ends.get(p, 0)
        ]
        for p in partitions
    }
    got_group = {o["partition"]: o["offset"] for o in group.get("offsets", [])}
    return _report(
        paths,
        started,
        topics=sorted(DEMO_TOPICS),
        at=at,
        offsets=offsets,
        group={**group, "expected": want_group, "matches": got_group == want_group},
        want=want,
        got=got,
        kafka=f"Apache Kafka {DEFAULT_KAFKA_VERSION}: source {source.bootstrap_servers} "
        f"(3 brokers), target {target.bootstrap_servers} (1 broker)",
        target=target.bootstrap_servers,
        metadata={"history": True, "changed_at": traffic.retention_changed_ms},
        end=traffic.end_ms,
    )


@contextlib.contextmanager
def _offsets_follower(paths: DemoPaths, bootstrap: str) -> Iterator[None]:
    """Run the offsets follower (``kafka-archive catalog follow-offsets``) in a thread for the
    body of the block, then once more until caught up: the group's commit history is read as
    it happens, before the broker's cleaner compacts ``__consumer_offsets``."""
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.offsets_follower.loop import follow_offsets

    catalog = open_catalog(paths.db_url, create=True)
    stop = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            follow_offsets(catalog, CLUSTER, bootstrap, stop=stop)
        except BaseException as exc:  # re-raised in the demo's thread below
            failure.append(exc)

    thread = threading.Thread(target=run, name="offsets-follower", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)
    if failure:
        raise DemoError(f"the offsets follower failed: {failure[0]}")
    follow_offsets(catalog, CLUSTER, bootstrap, until_caught_up=True)
