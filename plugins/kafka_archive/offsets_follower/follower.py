"""The offsets follower: a continuous reader of a cluster's ``__consumer_offsets`` that writes
every consumer-group commit into the catalog, exactly once.

Why: the broker compacts ``__consumer_offsets`` (one record kept per group/topic/partition)
well before its segments roll and are archived, so the segment archive alone loses most of a
group's commit history. The follower reads the records while the broker still holds them.

Contract of :func:`follow_offsets` / :func:`apply_batch`:

* **What is read.** Every partition of ``__consumer_offsets`` (assigned directly: no consumer
  group of its own), ``isolation.level=read_committed``: a commit written inside a transaction
  (``TxnOffsetCommit``, e.g. ``send_offsets_to_transaction``) is read only once its producer
  committed; one of an aborted transaction is never read. Every record is decoded with
  :func:`segment_lib.consumer_offsets.decode_offsets_record` (offset commit keys 0/1, values
  v0-v4, group metadata, KIP-848 records, tombstones). Offset commits become ``commit`` rows and
  offset tombstones ``delete`` rows of ``followed_commits``; the other record types are counted.
* **When a commit counts.** A plain commit at its record's timestamp (the group coordinator
  sets it when it appends the commit), kept as ``record_timestamp`` and ``visible_ts``;
  ``commit_timestamp`` is the value's field. A transactional one (``TxnOffsetCommit``) at its
  transaction's COMMIT marker: ``visible_ts`` and ``effective_offset`` are the marker's
  timestamp and offset. librdkafka shows neither producer ids nor markers, so a second reader
  (:mod:`~kafka_archive.offsets_follower.raw_batches`: Fetch read_uncommitted through
  kafka-python, bytes parsed by ``segment_lib``) scans the same partitions' raw batches forward
  (:class:`~kafka_archive.offsets_follower.txn_moments.TxnMomentResolver`); the consumer's
  records and positions stay the librdkafka consumer's.
* **Exactly once.** The follower's position per partition (``offsets_follower_positions``: every
  record before ``next_offset`` is reflected) is stored in the **same database transaction** as
  the rows read up to it. A crash (even ``kill -9``) at any moment leaves either both or neither,
  and the next run resumes at the stored position: nothing lost, nothing twice. The transaction
  moves a position only from the value this follower read at its start or last write; if
  another follower moved it meanwhile, nothing is written (:class:`PositionConflictError`,
  handled by re-reading the positions and seeking there). Rows are also unique per
  ``(cluster, partition, log_offset)`` and inserted with "on conflict do nothing", so re-reading
  records already stored (positions deleted by hand, say) adds nothing.
* **Caught up.** With ``until_caught_up`` the run ends once every partition reached its end as
  seen by a ``read_committed`` consumer (the last stable offset): what was committed when the
  run started is then stored. A scheduled run every N minutes loses nothing as long as the broker
  keeps uncompacted records longer than N (see docs/catalog.md, "The offsets follower").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy import Table, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.models import FollowedCommitRow, FollowerPosition
from kafka_archive.errors import KafkaArchiveError
from kafka_archive.kafka_protocol.config import librdkafka_config
from kafka_archive.offsets_follower.raw_batches import (
    kafka_python_config,
)
from segment_lib.consumer_offsets import (
    CoordinatorRecord,
    GroupMetadata,
    OffsetCommit,
    OffsetCommitKey,
    Tombstone,
    decode_offsets_record,
)
from segment_lib.errors import CorruptRecordError

__all__ = [
    "CONSUMER_OFFSETS_TOPIC",
    "BatchResult",
    "FollowReport",
    "PositionConflictError",
    "ReadRecord",
    "apply_batch",
    "consumer_config",
    "decode_records",
    "load_positions",
]

log = logging.getLogger(__name__)

CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"


class PositionConflictError(KafkaArchiveError, RuntimeError):
    """Another follower moved a position this one was about to move; nothing was written."""


@dataclass(frozen=True, slots=True)
class ReadRecord:
    """One record of ``__consumer_offsets`` as a consumer delivered it; ``marker`` is the
    (offset, timestamp) of its transaction's COMMIT marker when it was written inside a
    transaction (``None``: a plain record, or not known)."""

    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    marker: tuple[int, int] | None = None


@dataclass(slots=True)
class DecodeCounts:
    """What a run of records held besides offset commits."""

    commits: int = 0
    tombstones: int = 0
    group_records: int = 0
    other_records: int = 0
    undecodable: int = 0

    def add(self, other: DecodeCounts) -> None:
        self.commits += other.commits
        self.tombstones += other.tombstones
        self.group_records += other.group_records
        self.other_records += other.other_records
        self.undecodable += other.undecodable


def decode_records(
    cluster: str, records: Iterable[ReadRecord], now_ms: int
) -> tuple[list[dict[str, Any]], DecodeCounts]:
    """``followed_commits`` rows for the offset commits and offset tombstones among
    ``records``, and counts of everything read. Undecodable records are counted and skipped
    (logged), never fatal: one bad record must not stop the history of every group."""
    rows: list[dict[str, Any]] = []
    counts = DecodeCounts()
    for r in records:
        try:
            rec = decode_offsets_record(r.key, r.value)
        except CorruptRecordError as exc:
            counts.undecodable += 1
            log.warning("__consumer_offsets-%d@%d: undecodable: %s", r.partition, r.offset, exc)
            continue
        eff_offset, eff_ts = r.marker if r.marker is not None else (r.offset, r.timestamp)
        base = {
            "cluster": cluster,
            "source_partition": r.partition,
            "log_offset": r.offset,
            "record_timestamp": r.timestamp,
            "effective_offset": eff_offset,
            "visible_ts": eff_ts,
            "followed_at_ms": now_ms,
        }
        if isinstance(rec, OffsetCommit):
            counts.commits += 1
            rows.append(
                base
                | {
                    "group_id": rec.group,
                    "topic": rec.topic,
                    "partition": rec.partition,
                    "kind": "commit",
                    "committed_offset": rec.offset,
                    "leader_epoch": rec.leader_epoch,
                    "metadata_text": rec.metadata,
                    "commit_timestamp": rec.commit_timestamp,
                    "expire_timestamp": rec.expire_timestamp,
                }
            )
        elif isinstance(rec, Tombstone) and isinstance(rec.key, OffsetCommitKey):
            counts.tombstones += 1
            k = rec.key
            rows.append(
                base
                | {
                    "group_id": k.group,
                    "topic": k.topic,
                    "partition": k.partition,
                    "kind": "delete",
                    "committed_offset": -1,
                    "leader_epoch": -1,
                    "metadata_text": "",
                    "commit_timestamp": -1,
                    "expire_timestamp": -1,
                }
            )
        elif isinstance(rec, GroupMetadata | CoordinatorRecord | Tombstone):
            counts.group_records += 1
        else:
            counts.other_records += 1
    return rows, counts


def load_positions(catalog: Catalog, cluster: str) -> dict[int, int]:
    """Stored ``next_offset`` per ``__consumer_offsets`` partition of ``cluster``."""
    fp = FollowerPosition
    with catalog.session() as s:
        return {
            p: n
            for p, n in s.execute(
                select(fp.source_partition, fp.next_offset).where(fp.cluster == cluster)
            )
        }


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What one :func:`apply_batch` transaction stored."""

    rows_written: int
    counts: DecodeCounts
    positions: dict[int, int]


def _insert_ignoring_duplicates(s: Session, rows: list[dict[str, Any]]) -> None:
    tbl = FollowedCommitRow.__table__
    assert isinstance(tbl, Table)
    keys = ["cluster", "source_partition", "log_offset"]
    name = s.get_bind().dialect.name
    if name == "postgresql":
        s.execute(postgresql.insert(tbl).on_conflict_do_nothing(index_elements=keys), rows)
    elif name == "sqlite":
        s.execute(sqlite.insert(tbl).on_conflict_do_nothing(index_elements=keys), rows)
    else:  # pragma: no cover - the catalog supports SQLite and PostgreSQL
        raise NotImplementedError(f"catalog dialect {name!r}")


def apply_batch(
    catalog: Catalog,
    cluster: str,
    records: Sequence[ReadRecord],
    expected: Mapping[int, int | None],
    *,
    ends: Mapping[int, int] | None = None,
    now_ms: int | None = None,
) -> BatchResult:
    """Store ``records`` and move positions, in **one** database transaction.

    ``expected`` maps every partition the batch touches to the ``next_offset`` this follower
    believes is stored (``None``: no row yet). A partition's new position is one past its last
    record, or ``ends[p]`` when greater (an end-of-partition offset the consumer reported: the
    offsets between were transaction markers, aborted or compacted records). Records before the
    expected position are already stored and skipped.

    Raises:
        PositionConflictError: a stored position differs from ``expected`` (another follower
            wrote meanwhile); the transaction is rolled back, nothing is written.
    """
    now = int(time.time() * 1000) if now_ms is None else now_ms
    ends = ends or {}
    fresh = [r for r in records if r.offset >= (expected.get(r.partition) or 0)]
    rows, counts = decode_records(cluster, fresh, now)
    new_pos: dict[int, int] = {}
    read: dict[int, int] = {}
    commits: dict[int, int] = {}
    for r in fresh:
        new_pos[r.partition] = max(new_pos.get(r.partition, 0), r.offset + 1)
        read[r.partition] = read.get(r.partition, 0) + 1
    for row in rows:
        commits[row["source_partition"]] = commits.get(row["source_partition"], 0) + 1
    for p, end in ends.items():
        if end > max(new_pos.get(p, 0), expected.get(p) or 0):
            new_pos[p] = end
    missing = set(new_pos) - set(expected)
    if missing:
        raise ValueError(f"no expected position for partition(s) {sorted(missing)}")
    if not rows and all(new_pos[p] == expected[p] for p in new_pos):
        return BatchResult(0, counts, new_pos)  # nothing new: no transaction
    fp = FollowerPosition
    with catalog.session() as s, s.begin():
        if rows:
            _insert_ignoring_duplicates(s, rows)
        for p, pos in sorted(new_pos.items()):
            old = expected[p]
            if old is None:
                if s.get(fp, (cluster, p)) is not None:
                    raise PositionConflictError(
                        f"__consumer_offsets-{p}: another follower stored a position"
                    )
                s.execute(
                    insert(fp).values(
                        cluster=cluster,
                        source_partition=p,
                        next_offset=pos,
                        records_read=read.get(p, 0),
                        commits_recorded=commits.get(p, 0),
                        updated_at_ms=now,
                    )
                )
                continue
            done = s.execute(
                update(fp)
                .where(fp.cluster == cluster, fp.source_partition == p, fp.next_offset == old)
                .values(
                    next_offset=pos,
                    records_read=fp.records_read + read.get(p, 0),
                    commits_recorded=fp.commits_recorded + commits.get(p, 0),
                    updated_at_ms=now,
                )
            )
            if getattr(done, "rowcount", 1) != 1:
                raise PositionConflictError(
                    f"__consumer_offsets-{p}: stored position is no longer {old}"
                )
    return BatchResult(len(rows), counts, new_pos)


@dataclass(slots=True)
class FollowReport:
    """What one :func:`follow_offsets` run did (``--json`` prints :meth:`to_json`)."""

    cluster: str
    partitions: int = 0
    records_read: int = 0
    commits_recorded: int = 0
    tombstones_recorded: int = 0
    group_records: int = 0
    other_records: int = 0
    undecodable: int = 0
    #: records written inside a transaction, stored at their COMMIT marker
    transactional_records: int = 0
    #: records whose raw batch or COMMIT marker the raw scan did not find (stored at their
    #: record time, logged)
    unresolved_markers: int = 0
    transactions: int = 0
    conflicts: int = 0
    caught_up: bool = False
    stopped_by: str = ""
    seconds: float = 0.0
    positions: dict[int, int] = field(default_factory=dict)
    #: partitions whose stored position was below the broker's log start offset when the run
    #: began: records in between were deleted (retention) before the follower read them
    behind_log_start: dict[int, list[int]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "follow-offsets", **asdict(self)}


def consumer_config(bootstrap: str, extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    """librdkafka settings of the follower's consumer (``extra`` overrides, e.g. security)."""
    from kafka_archive.client_log import CLIENT_LOG_SETTINGS

    conf: dict[str, Any] = {
        # librdkafka's log lines captured, summarised in errors (never streamed)
        **CLIENT_LOG_SETTINGS,
        "bootstrap.servers": bootstrap,
        # required by the client, never used: partitions are assigned, nothing is committed
        "group.id": "kafka-archive-offsets-follower",
        "client.id": "kafka-archive-offsets-follower",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "isolation.level": "read_committed",
        # (Java's exclude.internal.topics is not needed: partitions are assigned, never
        # subscribed by pattern; librdkafka has no such setting and refuses it)
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    }
    conf.update(extra or {})
    return conf


def probe_cluster(bootstrap: str, extra: Mapping[str, str] | None = None) -> None:
    """Return once the cluster at ``bootstrap`` answers a metadata request (the follower's
    callers check this before they create a catalog, so a wrong address creates nothing).

    Raises:
        ClusterUnreachable: it did not answer (the message summarises what librdkafka said).
        KafkaException: librdkafka refused a setting of ``extra``.
        UnsupportedRawSetting: the raw-batch reader (kafka-python) cannot apply a setting.
    """
    from confluent_kafka import Consumer

    from kafka_archive.client_log import reach_metadata

    kafka_python_config(consumer_config(bootstrap, extra))
    consumer = Consumer(librdkafka_config(consumer_config(bootstrap, extra)))
    try:
        reach_metadata(consumer, None, what=f"the cluster at {bootstrap}")
    finally:
        consumer.close()
