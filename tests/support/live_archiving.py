"""Archive a real cluster's live log dirs repeatedly, keeping evidence of what the brokers held.

:class:`LiveArchiver` runs :func:`kafka_archive.archive.run_archive` once per broker (a
*round*), broker 1 first, each broker with its own state dir, as the per-broker archiver
workers would. Before every round it hard-links the files of the watched partitions (topics
starting with ``prefix``) into ``evidence/round-N/``: Kafka never rewrites a rolled segment in
place (the cleaner writes new files and renames them; retention renames to ``.deleted`` and
unlinks), so a hard link keeps the exact bytes the broker held at that moment even after the
cleaner replaced them. :meth:`LiveArchiver.broker_bytes` answers "what were the bytes of this
file on that broker" from the evidence or the live file.

It also counts the transient files (``.deleted``, ``.cleaned``, ``.swap``) it saw in the log
dirs, so a test can tell that the "never archived" assertion was exercised.
"""

from __future__ import annotations

import collections
import contextlib
import os
import time
from collections.abc import Collection
from pathlib import Path

import pytest
from kafka_archive.archive import iter_manifests, run_archive
from kafka_archive.archive.layout import manifest_key
from kafka_archive.archive.manifest import SegmentManifest
from kafka_archive.archive.report import ArchiveReport
from kafka_archive.store import ObjectStore, open_store
from kafka_archive_dev.local_kafka import LocalKafkaCluster

from support.live_workload import LiveWorkload

__all__ = [
    "ARCHIVE_NAME",
    "TRANSIENT_SUFFIXES",
    "LiveArchiver",
    "archive_live_workload",
    "broker_offsets",
    "covered_to",
    "live_archive_store",
    "manifests_by_partition",
]

TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")
#: the cluster name of the session's shared live archive (every live test archives into it)
ARCHIVE_NAME = "live"


@pytest.fixture(scope="session")
def live_archive_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[ObjectStore, Path]:
    """One local store and archiver state for every live-archive test of the session (a
    pytest plugin: ``pytest_plugins = ["support.live_archiving"]``): each broker's log dir holds
    every test's topics, and sharing the archive means each segment is archived (and hashed)
    once, not once per test module."""
    root = tmp_path_factory.mktemp("live-archive-store")
    return open_store(str(root / "store")), root / "state"


class LiveArchiver:
    """Rounds of ``run_archive`` over every broker of ``cluster`` into ``store``."""

    def __init__(
        self,
        cluster: LocalKafkaCluster,
        store: ObjectStore,
        *,
        name: str,
        prefix: str,
        workdir: Path,
        state_dir: Path | None = None,
        concurrency: int = 2,
    ) -> None:
        self.cluster = cluster
        self.store = store
        self.name = name
        self.prefix = prefix
        self.workdir = workdir
        self.state_dir = state_dir or workdir / "state"
        self.concurrency = concurrency
        self.rounds = 0
        self.reports: list[ArchiveReport] = []
        #: transient file suffix -> how many such files the rounds saw in watched partitions
        self.transient_seen: collections.Counter[str] = collections.Counter()
        #: (round, manifest key) of every segment archived
        self.archived_in_round: dict[str, int] = {}

    def _evidence(self, tag: str) -> None:
        for node_id, log_dir in self.cluster.log_dirs.items():
            with contextlib.suppress(FileNotFoundError):
                part_dirs = [d for d in log_dir.iterdir() if d.name.startswith(self.prefix)]
            for part in part_dirs:
                dest = self.workdir / "evidence" / f"round-{tag}" / str(node_id) / part.name
                dest.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(FileNotFoundError):
                    names = os.listdir(part)
                for fname in names:
                    for suffix in TRANSIENT_SUFFIXES:
                        if fname.endswith(suffix):
                            self.transient_seen[suffix] += 1
                    with contextlib.suppress(FileNotFoundError, FileExistsError):
                        os.link(part / fname, dest / fname)

    def run_round(self) -> list[ArchiveReport]:
        """Snapshot the evidence, archive broker 1, 2, ... once each, snapshot again."""
        self.rounds += 1
        try:
            return self._round()
        finally:
            self._evidence(f"{self.rounds}-post")

    def _round(self) -> list[ArchiveReport]:
        self._evidence(f"{self.rounds}-pre")
        out = []
        for node_id, log_dir in sorted(self.cluster.log_dirs.items()):
            report = run_archive(
                cluster=self.name,
                broker_id=node_id,
                log_dirs=[str(log_dir)],
                store=self.store,
                concurrency=self.concurrency,
                state_dir=str(self.state_dir / str(node_id)),
            )
            for o in report.archived:
                if o.manifest_key:
                    self.archived_in_round[o.manifest_key] = self.rounds
            out.append(report)
        self.reports.extend(out)
        return out

    def manifests(self, topic: str | None = None) -> list[SegmentManifest]:
        return list(iter_manifests(self.store, self.name, topic))

    def broker_bytes(self, m: SegmentManifest, file_name: str) -> list[bytes]:
        """The bytes ``file_name`` of ``m``'s source partition had on its broker: from the
        evidence taken before and after the round that archived it, and the live file.

        (A compaction version that lived only inside one round is seen by neither snapshot;
        tests fall back to checking its records against what was produced.)"""
        node = m.source.broker_id
        found = []
        key = _manifest_key(m)
        rnd = self.archived_in_round.get(key, self.rounds)
        for r in (f"{rnd}-pre", f"{rnd}-post", f"{rnd + 1}-pre"):
            p = (
                self.workdir
                / "evidence"
                / f"round-{r}"
                / str(node)
                / m.source.partition_dir
                / file_name
            )
            if p.exists():
                found.append(p.read_bytes())
        live = self.cluster.log_dirs[node] / m.source.partition_dir / file_name
        with contextlib.suppress(FileNotFoundError):
            found.append(live.read_bytes())
        return found


def _manifest_key(m: SegmentManifest) -> str:
    return manifest_key(m.cluster, m.topic, m.partition, m.base_offset, m.segment_sha256)


def manifests_by_partition(
    manifests: list[SegmentManifest],
) -> dict[tuple[str, int], list[SegmentManifest]]:
    out: dict[tuple[str, int], list[SegmentManifest]] = collections.defaultdict(list)
    for m in manifests:
        out[(m.topic, m.partition)].append(m)
    for ms in out.values():
        ms.sort(key=lambda m: (m.base_offset, m.archived_at))
    return dict(out)


def covered_to(ms: list[SegmentManifest]) -> int:
    """The end of the contiguous archived offset range starting at 0 (0: none)."""
    end = 0
    for m in sorted(ms, key=lambda m: m.base_offset):
        if m.base_offset > end:
            break
        end = max(end, m.end_offset)
    return end


def archive_live_workload(
    cluster: LocalKafkaCluster,
    store_and_state: tuple[ObjectStore, Path],
    workdir: Path,
    *,
    prefix: str,
    seed: int,
    produce_s: float,
    skip_roles: Collection[str] = (),
    timeout_s: float = 60.0,
    replication: int = 3,
    min_rounds: int = 3,
) -> tuple[LiveWorkload, LiveArchiver, dict[tuple[str, int], int]]:
    """Create a :class:`LiveWorkload` of topics ``prefix-*`` on ``cluster``, run it for
    ``produce_s`` seconds (and ``min_rounds`` archive rounds at least) with archive rounds
    (into the session's shared store, under :data:`ARCHIVE_NAME`) going on meanwhile, seal
    it, then keep archiving (the brokers go on rolling, checkpointing, cleaning) until every
    partition of its topics (but those of the roles ``skip_roles``) is archived up to its seal
    record.

    Returns the workload, the archiver and ``(topic, partition) -> offset of its seal record``
    (the active segment's only record, so everything below it has rolled)."""
    wl = LiveWorkload(
        cluster.bootstrap_servers,
        prefix=prefix,
        segment_ms=2000,
        seed=seed,
        replication=replication,
    )
    wl.create_topics()
    store, state = store_and_state
    archiver = LiveArchiver(
        cluster, store, name=ARCHIVE_NAME, prefix=prefix, workdir=workdir, state_dir=state
    )
    wait_for = {t for role, t in wl.topics.items() if role not in skip_roles}
    wl.start()
    # Production goes on for ``produce_s`` and for at least ``min_rounds`` archive rounds:
    # on a loaded machine one round can take seconds, and the rounds that overlap
    # production (rolls, cleaning, open transactions under the archiver) are the point.
    produce_until = time.monotonic() + produce_s
    try:
        while time.monotonic() < produce_until or archiver.rounds < min_rounds:
            archiver.run_round()
            wl.check()
    finally:
        wl.stop()
    wl.seal()
    seals = {(r.topic, r.partition): r.offset for r in wl.seals}
    watched = {tp: seal for tp, seal in seals.items() if tp[0] in wait_for}
    deadline = time.monotonic() + timeout_s
    while True:
        archiver.run_round()
        by_tp = manifests_by_partition(archiver.manifests())
        short = {
            tp: (covered_to(by_tp.get(tp, [])), seal)
            for tp, seal in watched.items()
            if covered_to(by_tp.get(tp, [])) < seal
        }
        if not short:
            return wl, archiver, seals
        if time.monotonic() > deadline:
            raise AssertionError(f"not archived up to the seal records in {timeout_s:g} s: {short}")
        time.sleep(0.5)


def broker_offsets(
    bootstrap: str, queries: list[tuple[str, int, int]], timeout_s: float = 30.0
) -> dict[tuple[str, int, int], int]:
    """The broker's ListOffsets answer (offset, -1 if none) for each ``(topic, partition, ts)``.

    Batched: one ``offsets_for_times`` call asks every partition at once (a partition can be
    asked one timestamp per call), read_uncommitted (the high watermark bounds the answer)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kafka-archive-list-offsets-{os.getpid()}",
            "isolation.level": "read_uncommitted",
            "enable.auto.commit": False,
        }
    )
    per_tp: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
    for topic, part, ts in queries:
        if ts not in per_tp[(topic, part)]:
            per_tp[(topic, part)].append(ts)
    out: dict[tuple[str, int, int], int] = {}
    try:
        rounds = max((len(v) for v in per_tp.values()), default=0)
        for i in range(rounds):
            ask = [TopicPartition(t, p, tss[i]) for (t, p), tss in per_tp.items() if i < len(tss)]
            for tp in consumer.offsets_for_times(ask, timeout_s):
                if tp.error is not None:
                    raise RuntimeError(f"ListOffsets {tp.topic}-{tp.partition}: {tp.error}")
                out[(tp.topic, tp.partition, per_tp[(tp.topic, tp.partition)][i])] = tp.offset
    finally:
        consumer.close()
    return out
