"""The offsets follower's exactly-once store (no Kafka needed): positions move in the same
transaction as the rows they cover, so a process killed with SIGKILL at any moment leaves the
catalog consistent and a resumed run ends with exactly the full history; re-reading stored
records adds nothing; a second follower cannot move a position it did not read. And
``group-offsets`` merges the follower's history with the archive's, each commit once."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.catalog.db import Catalog, open_catalog
from kafka_archive.catalog.models import (
    FollowedCommitRow,
    FollowerPosition,
    OffsetCommitRow,
    Partition,
    Segment,
)
from kafka_archive.catalog.queries import group_commit_history, group_offsets
from kafka_archive.offsets_follower import follower
from kafka_archive.offsets_follower.follower import (
    PositionConflictError,
    ReadRecord,
    apply_batch,
    decode_records,
    load_positions,
)
from sqlalchemy import delete, func, insert, select
from support.offsets_records import synthetic_records

pytest_plugins = ["support.postgres"]

CLUSTER = "c1"
TESTS = Path(__file__).resolve().parent


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    url = (
        f"sqlite:///{tmp_path / 'catalog.db'}"
        if request.param == "sqlite"
        else str(request.getfixturevalue("pg_url"))
    )
    cat = open_catalog(url, create=True)
    try:
        yield cat
    finally:
        cat.close()


def _stored(cat: Catalog) -> list[tuple[Any, ...]]:
    fc = FollowedCommitRow
    with cat.session() as s:
        return [
            tuple(r)
            for r in s.execute(
                select(
                    fc.source_partition,
                    fc.log_offset,
                    fc.group_id,
                    fc.topic,
                    fc.partition,
                    fc.kind,
                    fc.committed_offset,
                    fc.commit_timestamp,
                    fc.record_timestamp,
                )
                .where(fc.cluster == CLUSTER)
                .order_by(fc.source_partition, fc.log_offset)
            )
        ]


def _expected(records: Sequence[ReadRecord], positions: dict[int, int] | None = None) -> list[Any]:
    """What the table must hold once every record below ``positions`` (all when None) is stored."""
    keep = [r for r in records if positions is None or r.offset < positions.get(r.partition, 0)]
    rows, _ = decode_records(CLUSTER, keep, 0)
    return sorted(
        (
            r["source_partition"],
            r["log_offset"],
            r["group_id"],
            r["topic"],
            r["partition"],
            r["kind"],
            r["committed_offset"],
            r["commit_timestamp"],
            r["record_timestamp"],
        )
        for r in rows
    )


def _run_batches(cat: Catalog, records: Sequence[ReadRecord], sizes: random.Random) -> None:
    """What the follower's loop does: from the stored positions on, one transaction per batch."""
    pos: dict[int, int | None] = dict.fromkeys({r.partition for r in records})
    pos.update(load_positions(cat, CLUSTER))
    todo = [r for r in records if r.offset >= (pos[r.partition] or 0)]
    i = 0
    while i < len(todo):
        batch = todo[i : i + sizes.randint(1, 60)]
        res = apply_batch(cat, CLUSTER, batch, {r.partition: pos[r.partition] for r in batch})
        pos.update(res.positions)
        i += len(batch)


def test_decodes_every_kind_with_record_timestamps() -> None:
    recs = synthetic_records(3000)
    rows, counts = decode_records(CLUSTER, recs, 5)
    assert counts.commits > 1000 and counts.tombstones > 100 and counts.group_records > 100
    assert counts.undecodable > 0
    assert counts.commits + counts.tombstones == len(rows)
    assert counts.commits + counts.tombstones + counts.group_records + counts.undecodable == len(
        recs
    )
    by_pos = {(r.partition, r.offset): r for r in recs}
    for row in rows:
        rec = by_pos[(row["source_partition"], row["log_offset"])]
        assert row["record_timestamp"] == rec.timestamp
        if row["kind"] == "commit":
            assert row["commit_timestamp"] == rec.timestamp  # the generator sets both alike
            assert row["metadata_text"] == f"m{row['committed_offset']}"
        else:
            assert row["committed_offset"] == -1


def test_batches_store_everything_once_and_rereading_adds_nothing(catalog: Catalog) -> None:
    recs = synthetic_records(2500)
    _run_batches(catalog, recs, random.Random(1))
    want = _expected(recs)
    assert _stored(catalog) == want
    ends = {p: max(r.offset for r in recs if r.partition == p) + 1 for p in range(3)}
    assert load_positions(catalog, CLUSTER) == ends
    with catalog.session() as s:
        counters = s.execute(
            select(
                func.sum(FollowerPosition.records_read), func.sum(FollowerPosition.commits_recorded)
            )
        ).one()
    assert tuple(counters) == (len(recs), len(want))
    # a re-run from the stored positions reads nothing new
    _run_batches(catalog, recs, random.Random(2))
    assert _stored(catalog) == want
    # positions lost (deleted by hand): everything is read again, nothing is added
    with catalog.session() as s, s.begin():
        s.execute(delete(FollowerPosition))
    _run_batches(catalog, recs, random.Random(3))
    assert _stored(catalog) == want


def test_a_stale_position_writes_nothing(catalog: Catalog) -> None:
    recs = synthetic_records(200)
    first = [r for r in recs if r.partition == 0][:20]
    apply_batch(catalog, CLUSTER, first, {0: None})
    before = _stored(catalog)
    more = [r for r in recs if r.partition == 0][20:40]
    # a second follower that still believes nothing is stored, or an older position
    with pytest.raises(PositionConflictError):
        apply_batch(catalog, CLUSTER, more, {0: None})
    with pytest.raises(PositionConflictError):
        apply_batch(catalog, CLUSTER, more, {0: first[5].offset})
    assert _stored(catalog) == before
    assert load_positions(catalog, CLUSTER) == {0: first[-1].offset + 1}


def test_end_of_partition_moves_the_position_past_markers(catalog: Catalog) -> None:
    recs = [r for r in synthetic_records(100) if r.partition == 1][:10]
    last = recs[-1].offset
    res = apply_batch(catalog, CLUSTER, recs, {1: None}, ends={1: last + 3, 2: 0})
    assert res.positions == {1: last + 3}  # an end at 0 of an empty partition moves nothing
    assert load_positions(catalog, CLUSTER) == {1: last + 3}


def test_failure_inside_the_transaction_keeps_neither_rows_nor_position(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    recs = synthetic_records(300)
    _run_batches(catalog, recs[:100], random.Random(4))
    before, pos = _stored(catalog), load_positions(catalog, CLUSTER)
    real = follower._insert_ignoring_duplicates

    def insert_then_die(s: Any, rows: list[dict[str, Any]]) -> None:
        real(s, rows)
        raise RuntimeError("crash between the rows and the position")

    monkeypatch.setattr(follower, "_insert_ignoring_duplicates", insert_then_die)
    with pytest.raises(RuntimeError, match="crash"):
        _run_batches(catalog, recs, random.Random(5))
    assert _stored(catalog) == before and load_positions(catalog, CLUSTER) == pos
    monkeypatch.undo()
    _run_batches(catalog, recs, random.Random(5))
    assert _stored(catalog) == _expected(recs)


_CHILD = textwrap.dedent(
    """
    import random, sys
    sys.path.insert(0, {tests!r})
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.offsets_follower.follower import apply_batch, load_positions
    from support.offsets_records import synthetic_records

    cat = open_catalog({url!r}, create=True)
    recs = synthetic_records({n})
    pos = dict.fromkeys(range(3))
    pos.update(load_positions(cat, "c1"))
    todo = [r for r in recs if r.offset >= (pos[r.partition] or 0)]
    rng = random.Random({seed})
    i = 0
    while i < len(todo):
        batch = todo[i : i + rng.randint(1, 40)]
        res = apply_batch(cat, "c1", batch, {{r.partition: pos[r.partition] for r in batch}})
        pos.update(res.positions)
        i += len(batch)
        print(i, flush=True)
    print("done", flush=True)
    """
)


def test_kill_9_at_random_moments_then_resume(catalog: Catalog) -> None:
    """A follower process killed with SIGKILL (mid-transaction or not) five times: after each
    kill the rows are exactly the records below the stored positions; the last run completes
    the history with no duplicate."""
    n = 12_000
    recs = synthetic_records(n)
    rng = random.Random(11)
    kills = 0
    for attempt in range(6):
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _CHILD.format(
                    tests=str(TESTS),
                    url=catalog.engine.url.render_as_string(False),
                    n=n,
                    seed=attempt,
                ),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        stop_after = rng.randint(3, 60) if attempt < 5 else None
        for lines, line in enumerate(proc.stdout, 1):
            if line.strip() == "done":
                break
            if stop_after is not None and lines >= stop_after:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
                break
        proc.wait(120)
        proc.stdout.close()
        positions = load_positions(catalog, CLUSTER)
        assert positions, "the first run stored nothing before it was killed"
        assert _stored(catalog) == _expected(recs, positions), attempt
        if stop_after is None:
            assert proc.returncode == 0
    assert kills == 5
    assert _stored(catalog) == _expected(recs)


def _archive_rows(cat: Catalog, rows: Sequence[dict[str, Any]]) -> None:
    """Commits as the segment build writes them (one fake segment of __consumer_offsets-0)."""
    with cat.session() as s, s.begin():
        pid = s.execute(
            insert(Partition)
            .values(cluster=CLUSTER, topic="__consumer_offsets", partition=0)
            .returning(Partition.id)
        ).scalar_one()
        sid = s.execute(
            insert(Segment)
            .values(
                partition_id=pid,
                manifest_key="m",
                object_key="o",
                sha256=None,
                broker_id=1,
                log_dir=None,
                archived_at_ms=0,
                base_offset=0,
                end_offset=100,
                first_offset=0,
                last_offset=99,
                first_timestamp=0,
                max_timestamp=0,
                offset_of_max_timestamp=0,
                record_count=0,
                batch_count=0,
                size_bytes=0,
                codecs="",
                magics="2",
                transactional_batches=0,
                control_batches=0,
                epoch_runs="[]",
                status="canonical",
                error=None,
                cataloged_at_ms=0,
            )
            .returning(Segment.id)
        ).scalar_one()
        for r in rows:
            txn = r.get("marker")
            s.execute(
                insert(OffsetCommitRow).values(
                    cluster=CLUSTER,
                    group_id="g",
                    topic="t",
                    partition=r["p"],
                    kind=r.get("kind", "commit"),
                    committed_offset=r["off"],
                    leader_epoch=-1,
                    metadata_text="",
                    commit_timestamp=r["ts"],
                    expire_timestamp=-1,
                    source_partition_id=pid,
                    segment_id=sid,
                    log_offset=r["lo"],
                    record_timestamp=r["ts"],
                    producer_id=7 if txn else -1,
                    txn_state="committed" if txn else "none",
                    effective_offset=txn[0] if txn else r["lo"],
                    visible_ts=txn[1] if txn else r["ts"],
                )
            )


def _followed(lo: int, ts: int, off: int, p: int = 0, kind: str = "commit") -> ReadRecord:
    from segment_lib.consumer_offsets import encode_offset_commit_key, encode_offset_commit_value

    value = (
        None if kind == "delete" else encode_offset_commit_value(offset=off, commit_timestamp=ts)
    )
    return ReadRecord(0, lo, ts, encode_offset_commit_key("g", "t", p), value)


def test_group_offsets_merge_archive_and_follower(catalog: Catalog) -> None:
    # archive: old commits (its segments were archived before compaction), and a transactional
    # commit at log offset 30 that took effect at its COMMIT marker (offset 35, time 3500)
    _archive_rows(
        catalog,
        [
            {"p": 0, "lo": 10, "ts": 1000, "off": 100},
            {"p": 0, "lo": 11, "ts": 1100, "off": 110},
            {"p": 0, "lo": 30, "ts": 3000, "off": 300, "marker": (35, 3500)},
        ],
    )
    # follower: started later; saw the commit at 11 again, then newer ones, the transactional
    # commit (read_committed: at its record time), a plain commit before the marker, and an
    # offset deletion of partition 1
    apply_batch(
        catalog,
        CLUSTER,
        [
            _followed(11, 1100, 110),
            _followed(20, 2000, 200),
            _followed(21, 2100, 7, p=1),
            _followed(25, 2500, -1, p=1, kind="delete"),
            _followed(30, 3000, 300),
            _followed(32, 3200, 320),
        ],
        {0: None},
    )

    def at(t: int | None) -> dict[tuple[str, int], int]:
        return {(o.topic, o.partition): o.offset for o in group_offsets(catalog, CLUSTER, "g", t)}

    assert at(999) == {}
    assert at(1000) == {("t", 0): 100}  # archive only
    assert at(1100) == {("t", 0): 110}  # both
    assert at(2100) == {("t", 0): 200, ("t", 1): 7}  # follower only
    assert at(2500) == {("t", 0): 200}  # the deletion
    assert at(3300) == {("t", 0): 320}  # the plain commit; the transaction is still open
    assert at(3500) == {("t", 0): 300}  # the archive knows the marker came later
    assert at(None) == {("t", 0): 300}
    history = group_commit_history(catalog, CLUSTER, "g")
    assert [(c.offset, c.visible_ts, c.sources) for c in history if c.partition == 0] == [
        (100, 1000, ("archive",)),
        (110, 1100, ("archive", "follower")),  # seen by both: once
        (200, 2000, ("follower",)),
        (320, 3200, ("follower",)),
        (300, 3500, ("archive", "follower")),
    ]
    assert len(group_commit_history(catalog, CLUSTER, "g", from_ms=2000, to_ms=2500)) == 3


def test_dag_config_from_variable_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_archive.airflow.offsets_tasks import load_follow_config

    monkeypatch.setenv("KAFKA_ARCHIVE_DB", "/srv/catalog.db")
    monkeypatch.delenv("KAFKA_ARCHIVE_OFFSETS_CLUSTER", raising=False)
    with pytest.raises(ValueError, match="no cluster to follow"):
        load_follow_config(None)
    monkeypatch.setenv("KAFKA_ARCHIVE_OFFSETS_CLUSTER", "prod")
    monkeypatch.setenv("KAFKA_ARCHIVE_OFFSETS_BOOTSTRAP", "k1:9092")
    cfg = load_follow_config(None)
    assert (cfg.db_url, cfg.clusters[0].cluster, cfg.clusters[0].bootstrap) == (
        "/srv/catalog.db",
        "prod",
        "k1:9092",
    )
    raw = '{"db_url": "postgresql://c@db/c", "clusters": [{"cluster": "a", "bootstrap": "b:1"}]}'
    assert load_follow_config(raw).clusters[0].cluster == "a"
    with pytest.raises(ValueError):
        load_follow_config('{"db_url": "x", "clusters": [{"cluster": "a"}]}')


def test_unreachable_cluster_is_one_clear_error_and_creates_no_catalog(tmp_path: Path) -> None:
    """A dead or mistyped --bootstrap: one error line with a summary of what librdkafka said
    (its own log lines are captured, not streamed), exit 1, and no catalog (nor its directory)
    created, since the cluster is probed before the catalog is opened for writing."""
    db = tmp_path / "typo" / "catalog.db"
    proc = subprocess.run(
        [
            str(Path(sys.executable).parent / "kafka-archive"),
            "catalog",
            "follow-offsets",
            "--cluster",
            "c",
            "--bootstrap",
            "127.0.0.1:1",
            "--db",
            str(db),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stderr
    assert "cannot reach the cluster at 127.0.0.1:1" in proc.stderr
    assert "librdkafka reported" in proc.stderr
    # no librdkafka line of its own ("%3|<time>|FAIL|...") reached the terminal
    assert not [line for line in proc.stderr.splitlines() if line.startswith("%")], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not db.parent.exists()


def test_a_transactional_commit_counts_at_its_marker_when_the_archive_knows_it(
    catalog: Catalog,
) -> None:
    """Issue 20, point 4: the follower (read_committed through librdkafka, which shows neither
    producer ids nor markers) dates a transactional commit by its record; where the archive
    resolved the same record against its COMMIT marker, the marker's moment is the answer,
    as the broker's: between the record and the marker the previous commit stands."""
    _archive_rows(catalog, [{"p": 0, "lo": 30, "ts": 3000, "off": 300, "marker": (35, 3500)}])
    apply_batch(
        catalog,
        CLUSTER,
        [_followed(20, 2000, 200), _followed(30, 3000, 300)],
        {0: None},
    )

    def at(t: int) -> dict[tuple[str, int], int]:
        return {(o.topic, o.partition): o.offset for o in group_offsets(catalog, CLUSTER, "g", t)}

    assert at(2999) == {("t", 0): 200}
    assert at(3000) == {("t", 0): 200}  # the record is appended, the transaction still open
    assert at(3499) == {("t", 0): 200}
    assert at(3500) == {("t", 0): 300}  # the COMMIT marker
    # the history lists it once, at the marker, never at its record time
    inside = group_commit_history(catalog, CLUSTER, "g", from_ms=2900, to_ms=3100)
    assert [(c.offset, c.visible_ts) for c in inside] == []
    history = group_commit_history(catalog, CLUSTER, "g")
    assert [(c.offset, c.visible_ts, c.sources) for c in history] == [
        (200, 2000, ("follower",)),
        (300, 3500, ("archive", "follower")),
    ]
