"""Complete consumer-group history against a real cluster (issue 15, point 5).

Two groups commit offsets at recorded moments: plain commits, commits inside transactions
(``send_offsets_to_transaction``) and aborted transactions whose commits must never count. The
offsets follower (``kafka-archive catalog follow-offsets``, a subprocess) reads
``__consumer_offsets`` meanwhile; it is killed with SIGKILL twice while busy (a noise group
keeps the same ``__consumer_offsets`` partition flowing) and resumed. The test waits until the
broker's log cleaner has compacted the group's history away, archives and catalogs the
broker's ``__consumer_offsets`` segments as well, then asks ``catalog group-offsets --at T`` at
every recorded moment (and just before the first): it must equal what the test committed.
The archive alone must be wrong somewhere (what the issue found), and the merged history must
hold every commit exactly once.

A transactional commit takes effect when its COMMIT marker is written (issue 20, point 4), which
happens after ``commit_transaction`` returns (the transaction coordinator writes the markers
asynchronously): the test counts it as in effect, and takes the step's moment, only once the
broker's group coordinator answers the group's offsets as stable (:func:`_wait_applied`).
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from kafka_archive.airflow.offsets_tasks import FollowedCluster, FollowJobConfig, run_follow
from kafka_archive.archive import run_archive
from kafka_archive.catalog.build import build_catalog
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.models import FollowedCommitRow
from kafka_archive.catalog.queries import GroupOffset, group_commit_history, group_offsets
from kafka_archive.cli import _register_groups, app
from kafka_archive.offsets_follower.follower import CONSUMER_OFFSETS_TOPIC, load_positions
from kafka_archive.store import open_store
from kafka_archive_dev.local_kafka import LocalKafkaCluster
from sqlalchemy import func, select
from support.real_kafka import unique_name
from typer.testing import CliRunner

from segment_lib.consumer_offsets import (
    OffsetCommit,
    decode_offsets_record,
    partition_for_group,
)

CLUSTER = "live"
STEPS = 42
Offsets = dict[tuple[str, int], int]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def wait_for(what: str, cond: object, deadline_s: float = 180.0) -> None:
    """Poll ``cond()`` until true; fail (naming ``what``) after ``deadline_s``."""
    end = time.monotonic() + deadline_s
    while not cond():  # type: ignore[operator]
        if time.monotonic() > end:
            pytest.fail(f"gave up waiting for {what}")
        time.sleep(0.2)


@dataclass
class Group:
    """A group the test commits for, and everything it committed."""

    name: str
    topic: str
    consumer: Consumer
    state: Offsets = field(default_factory=dict)
    #: (topic, partition, offset) of every commit that took effect, in order
    commits: list[tuple[str, int, int]] = field(default_factory=list)
    aborted: set[int] = field(default_factory=set)

    def commit(self, offsets: Offsets) -> None:
        tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        for attempt in range(120):  # the coordinator may still be loading at first
            try:
                self.consumer.commit(offsets=tps, asynchronous=False)
                break
            except KafkaException:
                if attempt == 119:
                    raise
                time.sleep(0.5)
        self._took_effect(offsets)

    def _took_effect(self, offsets: Offsets) -> None:
        self.state.update(offsets)
        self.commits.extend((t, p, o) for (t, p), o in sorted(offsets.items()))


class Follower:
    """``kafka-archive catalog follow-offsets`` in a subprocess."""

    def __init__(self, bootstrap: str, db: str, log: Path) -> None:
        self.args = ["catalog", "follow-offsets", "--cluster", CLUSTER]
        self.args += ["--bootstrap", bootstrap, "--db", db]
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def _cmd(self, *extra: str) -> list[str]:
        code = "from kafka_archive.cli import main; main()"
        return [sys.executable, "-c", code, *self.args, *extra]

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                self._cmd("--duration", "30m"), stdout=out, stderr=subprocess.STDOUT
            )

    def check_alive(self) -> None:
        assert self.proc is not None
        assert self.proc.poll() is None, "the follower died on its own: " + self.log.read_text()

    def kill9(self) -> None:
        self.check_alive()
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        assert self.proc.returncode == -signal.SIGKILL

    def until_caught_up(self) -> dict[str, object]:
        out = subprocess.run(
            self._cmd("--until-caught-up", "--json"),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        report: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
        return report


def _wait_stable(admin: AdminClient, group: str, tps: list[TopicPartition]) -> None:
    """Until the group coordinator applied the group's transactional offsets of ``tps``
    (OffsetFetch requiring stable offsets answers them without UNSTABLE_OFFSET_COMMIT)."""
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(t.topic, t.partition) for t in tps])

    def stable() -> bool:
        try:
            res = admin.list_consumer_group_offsets([req], require_stable=True)[group].result(30)
        except KafkaException:
            return False
        return all(tp.error is None for tp in res.topic_partitions)

    wait_for("the transaction's offsets to be applied", stable, 60.0)


def _noise(bootstrap: str, group: str, topic: str, stop: threading.Event) -> None:
    """Commit for ``group`` continuously: the follower always has records to read."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    i = 0
    while not stop.is_set():
        i += 1
        try:
            c.commit(offsets=[TopicPartition(topic, i % 3, i)], asynchronous=False)
        except KafkaException:
            time.sleep(0.2)
        time.sleep(0.01)
    c.close()


def _watermark(bootstrap: str, partition: int) -> int:
    """High watermark of a ``__consumer_offsets`` partition (-1 while the topic is missing)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "gh-probe"})
    try:
        return int(
            c.get_watermark_offsets(
                TopicPartition(CONSUMER_OFFSETS_TOPIC, partition), timeout=30, cached=False
            )[1]
        )
    except KafkaException:
        return -1
    finally:
        c.close()


def _commit_records_on_broker(bootstrap: str, partition: int, group: str) -> int:
    """How many offset commits of ``group`` the broker still holds (read_committed), up to
    its end when asked (the noise group keeps appending: the end may never be reported)."""
    end = _watermark(bootstrap, partition)
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "gh-probe",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    c.assign([TopicPartition(CONSUMER_OFFSETS_TOPIC, partition, -2)])
    found = 0
    try:
        while True:
            m = c.poll(10)
            if m is None:
                continue
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    return found
                continue
            rec = decode_offsets_record(m.key(), m.value())  # type: ignore[arg-type]
            found += isinstance(rec, OffsetCommit) and rec.group == group
            if (m.offset() or 0) >= end - 1:
                return found
    finally:
        c.close()


def _asked(cli: CliRunner, db: str, group: str, at: int) -> Offsets:
    args = ["group-offsets", "--cluster", CLUSTER, "--group", group, "--at", str(at)]
    res = cli.invoke(app, ["catalog", *args, "--db", db, "--json"])
    assert res.exit_code == 0, res.output
    return {(o["topic"], o["partition"]): o["offset"] for o in map(json.loads, res.stdout.split())}


def _followed_rows(cat: Catalog, groups: list[str]) -> int:
    fc = FollowedCommitRow
    with cat.session() as s:
        return int(s.execute(select(func.count(fc.id)).where(fc.group_id.in_(groups))).scalar_one())


def _as_dict(found: list[GroupOffset]) -> Offsets:
    return {(o.topic, o.partition): o.offset for o in found}


@pytest.fixture
def cli() -> CliRunner:
    _register_groups()
    return CliRunner()


# one end-to-end scenario against a real cluster, read top to bottom
def test_group_offsets_equal_every_commit_after_compaction(  # noqa: C901, PLR0912, PLR0915
    kafka_cluster: LocalKafkaCluster, tmp_path: Path, cli: CliRunner
) -> None:
    started = time.monotonic()
    bs = kafka_cluster.bootstrap_servers
    nparts = int(kafka_cluster.config["offsets.topic.num.partitions"])
    topic = unique_name("gh-orders")
    kafka_cluster.create_topic(topic, 3)

    g1 = unique_name("gh-billing")
    p1 = partition_for_group(g1, nparts)
    g2 = unique_name("gh-audit")
    while partition_for_group(g2, nparts) == p1:  # a second __consumer_offsets partition
        g2 = unique_name("gh-audit")
    p2 = partition_for_group(g2, nparts)
    noise = unique_name("gh-noise")
    while partition_for_group(noise, nparts) != p1:  # busy in the same partition as g1
        noise = unique_name("gh-noise")
    groups = [
        Group(
            g,
            topic,
            Consumer({"bootstrap.servers": bs, "group.id": g, "enable.auto.commit": False}),
        )
        for g in (g1, g2)
    ]
    producer = Producer({"bootstrap.servers": bs, "transactional.id": unique_name("gh-txn")})
    producer.init_transactions(60)
    admin = AdminClient({"bootstrap.servers": bs})

    db = str(tmp_path / "catalog.db")
    follower = Follower(bs, db, tmp_path / "follower.log")
    stop_noise = threading.Event()
    noise_thread = threading.Thread(target=_noise, args=(bs, noise, topic, stop_noise))
    noise_thread.start()
    cat = open_catalog(db, create=True)

    def follower_has(parts: dict[int, int]) -> bool:
        follower.check_alive()
        pos = load_positions(cat, CLUSTER)
        return all(pos.get(p, 0) >= end for p, end in parts.items())

    def kill_while_busy_and_resume() -> None:
        # everything the groups committed so far is stored; then kill it mid-work (the noise
        # group keeps it reading and writing), and resume with a new process
        ends = {p1: _watermark(bs, p1), p2: _watermark(bs, p2)}
        wait_for("the follower to store the groups' commits", lambda: follower_has(ends))
        before = load_positions(cat, CLUSTER)[p1]
        follower.kill9()
        follower.start()
        wait_for(
            "the resumed follower to read on", lambda: load_positions(cat, CLUSTER)[p1] > before
        )

    rng = random.Random(15)
    moments: list[tuple[int, list[Offsets]]] = []
    counts = {"plain": 0, "txn": 0, "aborted": 0}
    try:
        # the noise creates __consumer_offsets; the follower starts and reads to its end before
        # the first commit (the guarantee holds while a follower runs and keeps up)
        wait_for("__consumer_offsets to exist", lambda: _watermark(bs, p1) > 0)
        follower.start()
        ends = {p1: _watermark(bs, p1), p2: _watermark(bs, p2)}
        wait_for("the follower to start", lambda: follower_has(ends))
        first = now_ms() - 1
        time.sleep(0.005)
        for step in range(STEPS):
            if step in (14, 28):
                kill_while_busy_and_resume()
            for g in groups:
                parts = rng.sample(range(3), rng.randint(1, 3))
                offsets = {(topic, p): 10 * step + p + 1 for p in parts}
                kind = (
                    "plain" if g is groups[1] else rng.choice(["plain", "plain", "txn", "aborted"])
                )
                counts[kind] += 1
                if kind == "plain":
                    g.commit(offsets)
                    continue
                producer.begin_transaction()
                producer.produce(topic, value=f"{g.name} {step}".encode(), partition=parts[0])
                if kind == "aborted":
                    offsets = {k: 100_000 + v for k, v in offsets.items()}
                    g.aborted.update(offsets.values())
                tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
                producer.send_offsets_to_transaction(tps, g.consumer.consumer_group_metadata(), 30)
                if kind == "aborted":
                    producer.abort_transaction(30)
                else:
                    producer.commit_transaction(30)
                    # in effect at its COMMIT marker, which the broker writes after EndTxn
                    # returned: the moment below must not come before it
                    _wait_stable(admin, g.name, tps)
                    g._took_effect(offsets)
            moments.append((now_ms(), [dict(g.state) for g in groups]))
            print(f"step {step} {time.monotonic() - started:.1f}s", file=sys.stderr)
            time.sleep(0.005)  # the next commit lands in a later millisecond
        # the broker compacts g1's history away (the noise keeps segments rolling)
        made = sum(1 for _ in groups[0].commits)
        wait_for(
            "the log cleaner to compact __consumer_offsets",
            lambda: _commit_records_on_broker(bs, p1, g1) < made,
        )
        retained = _commit_records_on_broker(bs, p1, g1)
        follower.kill9()
    finally:
        stop_noise.set()
        noise_thread.join(30)
        if follower.proc is not None and follower.proc.poll() is None:
            follower.proc.kill()
            follower.proc.wait(30)
        for g in groups:
            g.consumer.close()
    report = follower.until_caught_up()
    assert report["caught_up"] is True and report["partitions"] == nparts, report
    assert report["undecodable"] == 0, report
    # the DAG's task body, run again: caught up at once, nothing added for the groups
    rows = _followed_rows(cat, [g1, g2])
    again = run_follow(
        FollowJobConfig(db_url=db, clusters=[FollowedCluster(cluster=CLUSTER, bootstrap=bs)])
    )
    assert again[0]["caught_up"] is True, again
    assert _followed_rows(cat, [g1, g2]) == rows == sum(len(g.commits) for g in groups)

    # the segment archive of the same broker: an archive-only catalog, and the merged one
    store = open_store(str(tmp_path / "store"))
    run_archive(
        cluster=CLUSTER, broker_id=1, log_dirs=[str(kafka_cluster.log_dirs[1])], store=store
    )
    from kafka_archive.catalog._manifests import list_manifests, read_refs

    refs = [
        r
        for r in read_refs(store, list_manifests(store, CLUSTER))
        if r.topic == CONSUMER_OFFSETS_TOPIC
    ]
    assert refs, "no __consumer_offsets segment rolled and archived"
    archive_only = open_catalog(tmp_path / "archive-only.db", create=True)
    for c in (cat, archive_only):
        build_catalog(c, store.uri, refs=refs)

    checked = 0
    archive_wrong = 0
    for i, g in enumerate(groups):
        asked: list[tuple[int, Offsets]] = [(first, {})]
        asked += [(t, states[i]) for t, states in moments]
        for at, want in asked:
            assert _asked(cli, db, g.name, at) == want, (g.name, at)
            checked += 1
            if at == first:
                continue
            try:
                archive_wrong += _as_dict(group_offsets(archive_only, CLUSTER, g.name, at)) != want
            except LookupError:  # nothing at all of this group in the archive
                archive_wrong += 1
        # every commit once (archive and follower deduplicated), none of an aborted transaction
        history = group_commit_history(cat, CLUSTER, g.name)
        assert [(c.topic, c.partition, c.offset) for c in history] == g.commits
        assert not {c.offset for c in history} & g.aborted
    cat.close()
    archive_only.close()
    assert archive_wrong > 0, "the archive alone answered every moment: nothing was compacted?"
    print(
        f"\ngroup history: {STEPS} steps x 2 groups, {counts}, "
        f"{sum(len(g.commits) for g in groups)} partition commits, {checked} moments compared, "
        f"archive alone wrong at {archive_wrong}; g1 commits on the broker after compaction: "
        f"{retained} of {made}; {time.monotonic() - started:.1f}s"
    )
