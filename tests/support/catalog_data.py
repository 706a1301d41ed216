"""Archives for the catalog tests, made by the broker-faithful writer.

:func:`write_history` writes a broker's log dirs with everything the catalog must get right:
several multi-segment partitions with out-of-order CreateTime timestamps (small jitter and
large jumps back and forth), a LogAppendTime topic, every codec, idempotent and transactional
producers with COMMIT and ABORT markers, and ``__consumer_offsets`` partitions holding plain
and transactional offset commits of several groups. Every partition ends rolled (its active
segment is empty), so the archive holds all of its data.

:func:`archive_partition` puts a partition directory's rolled segments into a store, one
content-addressed object per segment, and returns their :class:`SegmentRef` s, the same way
the archive's manifests describe them. Tests use it for situations the real archive makes
only over time (replicas rolled differently, compaction rewrites, divergent replicas,
retention holes, out-of-order arrival).

:func:`brute_force_offset` is the definition the catalog is checked against: the first record
(control records included) whose timestamp is >= T, scanning everything.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.store import ObjectStore
from kafka_archive_dev.writer import BrokerWriter, ManualClock, PartitionWriter, WriteRecord
from sqlalchemy import text

from segment_lib.compression import Codec
from segment_lib.consumer_offsets import encode_offset_commit_key, encode_offset_commit_value
from segment_lib.log_file import open_log
from segment_lib.partition import PartitionView
from segment_lib.records import Record, TimestampType

START_MS = 1_700_000_000_000
CODECS = (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD)
OFFSETS_PARTITIONS = 3
GROUPS = ("billing", "audit", "search")


@dataclass
class History:
    """What :func:`write_history` made: partition dirs by ``(topic, partition)`` and the
    broker-side truth needed by group-offset tests."""

    root: Path
    broker: BrokerWriter
    clock: ManualClock
    dirs: dict[tuple[str, int], Path] = field(default_factory=dict)
    #: (group, topic, partition) -> [(visible_ts, offset)] in log order, as committed
    commits: dict[tuple[str, str, int], list[tuple[int, int]]] = field(default_factory=dict)


def _payload(rng: random.Random) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(rng.randint(10, 120)))


def _append_data(
    pw: PartitionWriter,
    rng: random.Random,
    clock: ManualClock,
    n: int,
    *,
    txn_pid: int | None,
    idempotent_pid: int | None,
) -> None:
    for i in range(n):
        now = clock.advance(rng.randint(1, 40))
        recs = []
        for _ in range(rng.randint(1, 4)):
            jitter = rng.randint(-3_000, 300)
            if rng.random() < 0.03:
                jitter -= 3_600_000  # a producer with a clock an hour behind
            if rng.random() < 0.02:
                jitter += 600_000  # ... or ten minutes ahead
            recs.append(
                WriteRecord(f"k{rng.randint(0, 50)}".encode(), _payload(rng), (), now + jitter)
            )
        codec = rng.choice(CODECS)
        if txn_pid is not None and i % 25 == 7:
            tx = pw.begin_transaction(txn_pid, 0)
            tx.append(recs, codec=codec)
            clock.advance(rng.randint(1, 20))
            tx.append([WriteRecord(b"tx", _payload(rng), (), clock.now_ms - 10)], codec=codec)
            clock.advance(rng.randint(1, 20))
            if i % 50 == 7:
                tx.commit()
            else:
                tx.abort()
        elif idempotent_pid is not None and i % 3 == 0:
            pw.append(recs, codec=codec, producer_id=idempotent_pid, producer_epoch=0)
        else:
            pw.append(recs, codec=codec)


def write_history(root: Path, *, seed: int = 7, appends: int = 180) -> History:
    """A broker's log dirs for the cross-checks (see the module docstring)."""
    rng = random.Random(seed)
    clock = ManualClock(START_MS)
    broker = BrokerWriter(root / "broker-1", 1, clock=clock, offsets_partitions=OFFSETS_PARTITIONS)
    hist = History(root, broker, clock)
    orders = [
        broker.partition("orders", p, segment_bytes=5_000, index_interval_bytes=400)
        for p in range(3)
    ]
    events = [
        broker.partition(
            "events",
            p,
            segment_bytes=4_000,
            index_interval_bytes=300,
            timestamp_type=TimestampType.LOG_APPEND_TIME,
        )
        for p in range(2)
    ]
    for round_ in range(3):
        for p, pw in enumerate(orders):
            _append_data(
                pw,
                rng,
                clock,
                appends // 3,
                txn_pid=500 + p if p == 0 else None,
                idempotent_pid=900 + p,
            )
        for pw in events:
            _append_data(pw, rng, clock, appends // 6, txn_pid=None, idempotent_pid=None)
        _commit_round(hist, rng, round_)
    for pw in broker.partitions.values():
        if pw.active.size:
            pw.roll()
    broker.close()
    for (topic, part), pw in broker.partitions.items():
        hist.dirs[(topic, part)] = pw.dir
    return hist


def archived_history(
    root: Path, *, cluster: str, seed: int = 7, appends: int = 60
) -> tuple[History, ObjectStore, int]:
    """A history (:func:`write_history`) under ``root``, archived by the archiver into the
    local store ``root/store``: ``(history, store, segments archived)``."""
    from kafka_archive.archive import run_archive
    from kafka_archive.store import open_store

    hist = write_history(root / "logs", seed=seed, appends=appends)
    store = open_store(str(root / "store"))
    report = run_archive(
        cluster=cluster, broker_id=1, log_dirs=[str(d) for d in hist.broker.log_dirs], store=store
    )
    return hist, store, report.segments_archived


def archived_catalog(
    root: Path, *, cluster: str, seed: int = 7, appends: int = 60
) -> tuple[History, str, str]:
    """:func:`archived_history`, cataloged in-process: ``(history, store URI, catalog path)``."""
    from kafka_archive.catalog.build import InProcessRunner, build_catalog
    from kafka_archive.catalog.db import open_catalog

    hist, store, _archived = archived_history(root, cluster=cluster, seed=seed, appends=appends)
    db = root / "catalog.db"
    with open_catalog(str(db), create=True) as cat:
        build_catalog(cat, store.uri, runner=InProcessRunner())
    return hist, store.uri, str(db)


def _commit_round(hist: History, rng: random.Random, round_: int) -> None:
    broker, clock = hist.broker, hist.clock
    for _ in range(12):
        clock.advance(rng.randint(50, 500))
        group = rng.choice(GROUPS)
        offsets = {("orders", p): rng.randint(0, 400) for p in range(3) if rng.random() < 0.7}
        if not offsets:
            continue
        res = broker.commit_offsets(group, offsets, codec=rng.choice(CODECS))
        for (t, p), off in offsets.items():
            hist.commits.setdefault((group, t, p), []).append((res.append_time, off))
    # a transactional producer commits offsets inside transactions (TxnOffsetCommit):
    # one committed, one aborted
    from segment_lib.consumer_offsets import partition_for_group

    group = "exactly-once"
    pw = broker.consumer_offsets(partition_for_group(group, OFFSETS_PARTITIONS))
    for commit in (True, False):
        clock.advance(rng.randint(10, 100))
        off = 1000 * (round_ + 1) + (0 if commit else 1)
        tx = pw.begin_transaction(7000 + round_, 0)
        tx.append(
            [
                WriteRecord(
                    encode_offset_commit_key(group, "orders", 1),
                    encode_offset_commit_value(offset=off, commit_timestamp=clock.now_ms),
                    (),
                    clock.now_ms,
                )
            ]
        )
        clock.advance(rng.randint(10, 100))
        res = tx.commit() if commit else tx.abort()
        if commit:
            hist.commits.setdefault((group, "orders", 1), []).append((res.append_time, off))


def archive_partition(
    store: ObjectStore,
    cluster: str,
    pdir: Path,
    *,
    broker_id: int = 1,
    archived_at_ms: int = START_MS + 10_000_000,
    include_active: bool = False,
    only_bases: set[int] | None = None,
    manifest_suffix: str = "",
) -> list[SegmentRef]:
    """Put the rolled segments of ``pdir`` into ``store`` and describe them."""
    view = PartitionView.open(pdir)
    segs = view.segments if include_active else view.rolled
    refs = []
    for seg in segs:
        if only_bases is not None and seg.base_offset not in only_bases:
            continue
        data = seg.log.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        key = f"{cluster}/{view.topic}/{view.partition}/{seg.base_offset:020d}-{sha[:16]}.log"
        store.put_if_absent(key, data, sha256=sha)
        refs.append(
            SegmentRef(
                cluster=cluster,
                topic=view.topic,
                partition=view.partition,
                manifest_key=f"manifests/{key}{manifest_suffix}.json",
                object_key=key,
                size=len(data),
                sha256=sha,
                base_offset=seg.base_offset,
                archived_at_ms=archived_at_ms,
                broker_id=broker_id,
                log_dir=str(pdir.parent),
            )
        )
    return refs


def all_records(pdir: Path) -> Iterator[Record]:
    """Every record of a partition dir in offset order, control records included."""
    view = PartitionView.open(pdir)
    for seg in view.segments:
        with open_log(seg.log) as log:
            for _h, r in log.iter_records(include_control=True):
                yield r


def brute_force_offset(records: list[Record], ts: int) -> tuple[int, int]:
    """(offset, timestamp) of the first record with timestamp >= ts, or (-1, -1)."""
    for r in records:
        if r.timestamp >= ts:
            return r.offset, r.timestamp
    return -1, -1


def sample_times(records: list[Record], rng: random.Random, n: int) -> list[int]:
    """Targets for cross-checks: before the first, after the last, exact record timestamps and
    their neighbours, and random times in between."""
    stamps = sorted({r.timestamp for r in records if r.timestamp >= 0})
    if not stamps:
        return [0, START_MS]
    out = [0, stamps[0] - 1, stamps[0], stamps[-1], stamps[-1] + 1, stamps[-1] + 10**9]
    for _ in range(n):
        pick = rng.choice(stamps)
        out.extend((pick, pick + 1, pick - 1, rng.randint(stamps[0], stamps[-1])))
    return out


def dump_catalog(cat: Catalog) -> dict[str, list[tuple[Any, ...]]]:
    """Table contents without surrogate ids or times, for comparing two catalogs."""
    queries = {
        "segments": "SELECT p.topic, p.partition, s.manifest_key, s.first_offset, "
        "s.last_offset, s.status, s.record_count FROM segments s JOIN partitions p "
        "ON p.id = s.partition_id",
        "chain": "SELECT p.topic, p.partition, c.lo, c.hi, s.manifest_key FROM chain_pieces c "
        "JOIN partitions p ON p.id = c.partition_id JOIN segments s ON s.id = c.segment_id",
        "time_index": "SELECT p.topic, p.partition, t.start_offset, t.end_offset, t.byte_start,"
        " t.byte_end, t.max_ts, t.record_max_ts, t.running_max_ts, t.record_count "
        "FROM time_index t JOIN partitions p ON p.id = t.partition_id",
        "histogram": "SELECT p.topic, p.partition, h.bucket_ms, h.records, h.bytes "
        "FROM histogram h JOIN partitions p ON p.id = h.partition_id",
        "commits": "SELECT group_id, topic, partition, kind, committed_offset, log_offset, "
        "txn_state, effective_offset, visible_ts FROM offset_commits",
        "markers": "SELECT log_offset, producer_id, committed, timestamp FROM txn_markers",
        "coverage": "SELECT p.topic, p.partition, g.kind, g.start_offset, g.end_offset "
        "FROM coverage_gaps g JOIN partitions p ON p.id = g.partition_id",
    }
    out = {}
    with cat.engine.connect() as conn:
        for name, q in queries.items():
            out[name] = sorted(tuple(r) for r in conn.execute(text(q)))
    return out


def assert_coverage_fresh(cat: Catalog) -> list[tuple[Any, ...]]:
    """``coverage_gaps`` and ``partition_totals`` hold exactly what the segment, chain and
    histogram rows make of them now (the build and the prune rewrite them in the transaction
    that changes those); returns the coverage rows."""
    from kafka_archive.catalog.coverage import refresh_all

    queries = [
        text(
            "SELECT partition_id, seq, kind, start_offset, end_offset, detail FROM coverage_gaps "
            "ORDER BY partition_id, seq"
        ),
        text("SELECT * FROM partition_totals ORDER BY partition_id"),
    ]
    with cat.engine.connect() as conn:
        stored = [[tuple(r) for r in conn.execute(q)] for q in queries]
        refresh_all(conn)  # recomputed from every row, then rolled back
        fresh = [[tuple(r) for r in conn.execute(q)] for q in queries]
        conn.rollback()
    assert stored == fresh
    assert stored[1], "no partition_totals rows"
    return stored[0]


def insert_segment(
    conn: Any,
    sid: int,
    pid: int,
    base: int,
    end: int,
    first: int,
    last: int,
    *,
    status: str = "canonical",
    first_timestamp: int = 0,
) -> None:
    """A ``segments`` row written straight in SQL (manifest ``m<sid>``, object ``k<sid>``),
    for tests of the read side on hand-made catalogs; what coverage and the chain read is
    given, the rest is placeholders."""
    conn.execute(
        text(
            "INSERT INTO segments (id, partition_id, manifest_key, object_key, archived_at_ms, "
            "base_offset, end_offset, first_offset, last_offset, first_timestamp, max_timestamp, "
            "offset_of_max_timestamp, record_count, batch_count, size_bytes, codecs, magics, "
            "transactional_batches, control_batches, epoch_runs, status, cataloged_at_ms) "
            "VALUES (:id, :pid, :m, :k, 0, :base, :end, :first, :last, :fts, :fts, :first, 1, 1, "
            "1, '', '2', 0, 0, '[]', :st, 0)"
        ),
        {"id": sid, "pid": pid, "m": f"m{sid}", "k": f"k{sid}", "base": base, "end": end,
         "first": first, "last": last, "fts": first_timestamp, "st": status},
    )  # fmt: skip
