"""Source partitions for replay tests, written by segment_lib's broker-faithful writer, with the
records a read_committed consumer must see computed from the *write events* (not the bytes).

:func:`write_source_topic` writes a topic whose partitions mix, deterministically from a seed:
plain and idempotent appends with every codec, record headers (including null values), null
keys and values, transactions that commit, abort, interleave with other producers, span segment
rolls, and (optionally) one still open at the end; an optional LogAppendTime partition.

The expectation model is deliberately simple and independent of the reader under test: records
of non-transactional appends are visible at once; a transaction's records are kept aside per
producer id and become visible when the test calls commit, vanish on abort, and stay invisible
when never resolved. Visible records are then ordered by offset, and - as a read_committed
consumer stops at the partition's last stable offset - only those below the first offset of a
transaction left open are expected (``stable_offset``); the visible ones at or above it are
counted in ``held_records`` (a later run delivers them once the transaction ends).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_archive_dev.writer.broker_writer import BrokerWriter
from kafka_archive_dev.writer.encode import WriteRecord
from kafka_archive_dev.writer.partition_writer import ManualClock, PartitionWriter

from segment_lib.compression import Codec
from segment_lib.records import Header, TimestampType


@dataclass(frozen=True, slots=True)
class Expected:
    """One record a read_committed consumer sees."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


@dataclass
class SourcePartition:
    topic: str
    partition: int
    dir: Path
    expected: list[Expected] = field(default_factory=list)
    aborted_records: int = 0
    open_records: int = 0
    log_end_offset: int = 0
    #: the first offset of the transaction left open (else the log end offset)
    stable_offset: int = 0
    #: visible records at or above ``stable_offset`` (not expected: held back)
    held_records: int = 0


_CODECS = (Codec.NONE, Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD)


def _records(rng: random.Random, tag: str, n: int, ts: int) -> list[WriteRecord]:
    out = []
    for i in range(n):
        key: bytes | None = f"{tag}-k{rng.randrange(40)}".encode() if rng.random() > 0.1 else None
        value: bytes | None = rng.randbytes(rng.randrange(0, 300)) if rng.random() > 0.05 else None
        headers: tuple[Header, ...] = ()
        if rng.random() < 0.5:
            headers = (Header("h1", f"{tag}-{i}".encode()), Header("empty", b""))
            if rng.random() < 0.3:
                headers += (Header("null", None),)
        out.append(WriteRecord(key, value, headers, ts + i))
    return out


def _expect(
    pw: PartitionWriter, first: int, recs: list[WriteRecord], lat: int | None
) -> list[Expected]:
    return [
        Expected(
            first + i,
            lat if lat is not None else (r.timestamp or 0),
            r.key,
            r.value,
            tuple((h.key, h.value) for h in r.headers),
        )
        for i, r in enumerate(recs)
    ]


def write_partition(
    log_dir: Path,
    topic: str,
    partition: int,
    *,
    seed: int = 0,
    rounds: int = 40,
    leave_open: bool = False,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    segment_bytes: int = 16 * 1024,
    start_ms: int = 1_700_000_000_000,
    broker: BrokerWriter | None = None,
) -> SourcePartition:
    """Write one partition (see the module docstring) and return its expected records.

    With ``broker`` the partition is one of that broker's (checkpoints, meta.properties: what
    the archiver needs); its last segment is rolled so every record is in a rolled segment, and
    the caller closes the broker.
    """
    rng = random.Random(seed * 1000 + partition)
    clock = ManualClock(start_ms)
    config: dict[str, Any] = {
        "segment_bytes": segment_bytes,
        "index_interval_bytes": 1024,
        "timestamp_type": timestamp_type,
        "clock": clock,
    }
    if broker is not None:
        pw = broker.partition(topic, partition, **config)
    else:
        pw = PartitionWriter(log_dir, topic, partition, **config)
    lat_mode = timestamp_type is TimestampType.LOG_APPEND_TIME
    sp = SourcePartition(topic, partition, pw.dir)
    visible: list[Expected] = []
    held: dict[int, list[Expected]] = {}
    pids = [1000 + partition * 10 + i for i in range(3)]
    for r in range(rounds):
        clock.advance(rng.randrange(1, 2000))
        kind = rng.random()
        codec = _CODECS[r % len(_CODECS)]
        recs = _records(rng, f"p{partition}r{r}", rng.randrange(1, 12), clock() - 50)
        if kind < 0.4:
            res = pw.append(recs, codec=codec)
            visible += _expect(pw, res.first_offset, recs, res.append_time if lat_mode else None)
        elif kind < 0.5:
            res = pw.append(recs, codec=codec, producer_id=900 + partition, producer_epoch=0)
            visible += _expect(pw, res.first_offset, recs, res.append_time if lat_mode else None)
        else:
            pid = rng.choice(pids)
            res = pw.append(recs, codec=codec, producer_id=pid, transactional=True)
            held.setdefault(pid, []).extend(
                _expect(pw, res.first_offset, recs, res.append_time if lat_mode else None)
            )
            if rng.random() < 0.45:
                clock.advance(5)
                if rng.random() < 0.65:
                    pw.commit(pid)
                    visible += held.pop(pid)
                else:
                    pw.abort(pid)
                    sp.aborted_records += len(held.pop(pid))
    # resolve all but (optionally) one open transaction
    for i, pid in enumerate(sorted(held)):
        if leave_open and i == 0:
            continue
        clock.advance(3)
        if pid % 2:
            pw.abort(pid)
            sp.aborted_records += len(held.pop(pid))
        else:
            pw.commit(pid)
            visible += held.pop(pid)
    # a few plain records after the open transaction (visible once it ends: held back until
    # then, as the last stable offset holds a read_committed consumer back)
    clock.advance(10)
    tail = _records(rng, f"p{partition}tail", 3, clock())
    res = pw.append(tail)
    visible += _expect(pw, res.first_offset, tail, res.append_time if lat_mode else None)
    sp.open_records = sum(len(v) for v in held.values())
    still_open = [e.offset for v in held.values() for e in v]
    if broker is not None:
        pw.roll()  # everything in rolled segments: the archiver never takes the active one
    else:
        pw.close()
    sp.log_end_offset = pw.log_end_offset
    sp.stable_offset = min(still_open, default=sp.log_end_offset)
    ordered = sorted(visible, key=lambda e: e.offset)
    sp.expected = [e for e in ordered if e.offset < sp.stable_offset]
    sp.held_records = len(ordered) - len(sp.expected)
    return sp


def write_source_topic(
    root: Path,
    topic: str = "orders",
    partitions: int = 3,
    *,
    seed: int = 0,
    rounds: int = 40,
    leave_open: bool = False,
    log_append_time_partition: int | None = None,
    broker: BrokerWriter | None = None,
    start_ms: int = 1_700_000_000_000,
) -> dict[int, SourcePartition]:
    """Write ``partitions`` partitions of ``topic`` under ``root/kafka-logs`` (or as partitions
    of ``broker``). Timestamps start at ``start_ms`` (a real target deletes records older than
    its ``retention.ms``: tests replaying into one start them recently)."""
    log_dir = root / "kafka-logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    return {
        p: write_partition(
            log_dir,
            topic,
            p,
            seed=seed,
            rounds=rounds,
            leave_open=leave_open,
            timestamp_type=(
                TimestampType.LOG_APPEND_TIME
                if p == log_append_time_partition
                else TimestampType.CREATE_TIME
            ),
            broker=broker,
            start_ms=start_ms,
        )
        for p in range(partitions)
    }


@dataclass
class ArchivedSource:
    """A writer-made source topic, archived by the archiver and cataloged in-process."""

    parts: dict[int, SourcePartition]
    store: Any  # kafka_archive.store.ObjectStore
    db_url: str
    catalog: Any  # kafka_archive.catalog.db.Catalog (the caller closes it)


def archived_source_topic(
    root: Path,
    *,
    cluster: str,
    topic: str = "orders",
    partitions: int = 3,
    seed: int = 0,
    cluster_id: str = "src-cluster-id",
    offsets_partitions: int = 3,
    start_ms: int = 1_700_000_000_000,
) -> ArchivedSource:
    """:func:`write_source_topic` as partitions of one broker under ``root/b1``, archived into
    the local store ``root/store`` and cataloged in ``root/catalog.db``."""
    from kafka_archive.archive.runner import run_archive
    from kafka_archive.catalog.build import build_catalog
    from kafka_archive.catalog.db import open_catalog
    from kafka_archive.store import open_store

    broker = BrokerWriter(
        root / "b1", 1, cluster_id=cluster_id, offsets_partitions=offsets_partitions
    )
    parts = write_source_topic(root, topic, partitions, seed=seed, broker=broker, start_ms=start_ms)
    broker.close()
    store = open_store(str(root / "store"))
    run_archive(
        cluster=cluster, broker_id=1, log_dirs=[str(d) for d in broker.log_dirs], store=store
    )
    db_url = f"sqlite:///{root / 'catalog.db'}"
    catalog = open_catalog(db_url, create=True)
    build_catalog(catalog, store.uri, cluster=cluster)
    return ArchivedSource(parts, store, db_url, catalog)
