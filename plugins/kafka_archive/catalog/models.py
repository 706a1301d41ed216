"""The catalog's tables (SQLAlchemy 2 typed ORM). The schema itself is created by the Alembic
migrations in :mod:`kafka_archive.catalog.migrations`; these classes must match them (a test
compares the two).

Vocabulary:

* a **partition** is ``(cluster, topic, partition)``; every other table hangs off its id.
* a **segment** is one archived segment *version*: one manifest, one object in the store. The
  same offsets may be archived several times (replicas rolled at different points, a segment
  rewritten by log compaction); each copy is its own row.
* the **chain** (``chain_pieces``) is the partition's *canonical* history: disjoint offset
  ranges, each served by exactly one segment version (see :mod:`kafka_archive.catalog.chain`).
* the **time index** (``time_index``) holds, per chain piece, runs of whole batches ("intervals")
  of at most N bytes with their byte range in the object, their largest timestamp and the
  partition-wide running maximum of timestamps up to their end, in offset order. Because that
  running maximum never decreases, "the first offset with timestamp >= T" is in the first
  interval whose running maximum is >= T: one index seek plus one ranged read.
* ``histogram``: records and bytes per partition per time bucket (for ``stats``).
* ``offset_commits`` / ``txn_markers``: the decoded history of ``__consumer_offsets``, from
  archived segments.
* ``pruned_ranges``: offsets a retention policy deleted from the archive, recorded before their
  objects are deleted (``planned``), then ``done``; ``object_leases``: offset ranges a running
  or queued replay or export needs, which prune never deletes (:mod:`kafka_archive.catalog.prune`,
  :mod:`kafka_archive.catalog.leases`).
* ``followed_commits`` / ``offsets_follower_positions``: the same history as the continuous
  reader of ``__consumer_offsets`` (:mod:`kafka_archive.groups.follower`) saw it, and how far it
  read each partition (written in the same transaction as its rows).

All timestamps are epoch milliseconds (BIGINT); -1 means "none", as in Kafka.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

__all__ = [
    "Base",
    "BuildRun",
    "ChainPiece",
    "FollowedCommitRow",
    "FollowerPosition",
    "HistogramBucket",
    "IntegrityProblem",
    "ObjectLease",
    "OffsetCommitRow",
    "Partition",
    "PrunedRange",
    "Segment",
    "TimeIndexEntry",
    "TxnMarker",
]


class Base(DeclarativeBase):
    """Declarative base of every catalog table."""


class Partition(Base):
    """One ``cluster/topic/partition`` the archive holds data for."""

    __tablename__ = "partitions"
    __table_args__ = (UniqueConstraint("cluster", "topic", "partition", name="uq_partitions"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cluster: Mapped[str] = mapped_column(String(255))
    topic: Mapped[str] = mapped_column(String(255))
    partition: Mapped[int] = mapped_column(Integer)


class Segment(Base):
    """One archived segment version (one manifest) and what a header scan of it found.

    ``status``: ``canonical`` (all its offsets are in the chain), ``partial`` (some are served
    by a version that takes precedence), ``shadowed`` (none are), ``empty`` (no batch) or
    ``corrupt`` (extraction failed: ``error`` says where; nothing of it is indexed) or ``pruned``
    (a retention policy deleted its objects: the row stays so that what the archive held
    remains known, see ``pruned_ranges``; nothing of it is in the chain or the indexes).
    ``end_offset`` is the manifest's exclusive end of the segment's offset range when it was
    archived (the next segment's base offset; -1 when unknown): offsets in
    ``[base_offset, end_offset)`` missing from the batches were removed by compaction, not lost.
    ``epoch_runs`` is JSON ``[[leader_epoch, first_offset, last_offset], ...]`` over its batches,
    used to tell replicas holding the same data from divergent ones.
    """

    __tablename__ = "segments"
    __table_args__ = (
        UniqueConstraint("partition_id", "manifest_key", name="uq_segments_manifest"),
        Index("ix_segments_partition_base", "partition_id", "base_offset"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    partition_id: Mapped[int] = mapped_column(ForeignKey("partitions.id"))
    manifest_key: Mapped[str] = mapped_column(String(1024))
    object_key: Mapped[str] = mapped_column(String(1024))
    sha256: Mapped[str | None] = mapped_column(String(64))
    broker_id: Mapped[int | None] = mapped_column(Integer)
    log_dir: Mapped[str | None] = mapped_column(String(1024))
    archived_at_ms: Mapped[int] = mapped_column(BigInteger)
    base_offset: Mapped[int] = mapped_column(BigInteger)
    end_offset: Mapped[int] = mapped_column(BigInteger)
    first_offset: Mapped[int] = mapped_column(BigInteger)
    last_offset: Mapped[int] = mapped_column(BigInteger)
    first_timestamp: Mapped[int] = mapped_column(BigInteger)
    max_timestamp: Mapped[int] = mapped_column(BigInteger)
    offset_of_max_timestamp: Mapped[int] = mapped_column(BigInteger)
    record_count: Mapped[int] = mapped_column(BigInteger)
    batch_count: Mapped[int] = mapped_column(BigInteger)
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    codecs: Mapped[str] = mapped_column(String(255))
    magics: Mapped[str] = mapped_column(String(32))
    transactional_batches: Mapped[int] = mapped_column(BigInteger)
    control_batches: Mapped[int] = mapped_column(BigInteger)
    epoch_runs: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    error: Mapped[str | None] = mapped_column(Text)
    cataloged_at_ms: Mapped[int] = mapped_column(BigInteger)
    #: the topic id from the segment's ``partition.metadata`` (NULL: unknown); added by the
    #: ``metadata_history`` branch's revision ``m0002_segment_topic_id``
    topic_id: Mapped[str | None] = mapped_column(String(32))


class ChainPiece(Base):
    """Offsets ``lo..hi`` (inclusive) of the canonical chain, served by ``segment_id``."""

    __tablename__ = "chain_pieces"
    __table_args__ = ({"sqlite_with_rowid": False},)

    partition_id: Mapped[int] = mapped_column(ForeignKey("partitions.id"), primary_key=True)
    lo: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    hi: Mapped[int] = mapped_column(BigInteger)
    segment_id: Mapped[int] = mapped_column(ForeignKey("segments.id"), index=True)


class TimeIndexEntry(Base):
    """One interval of the sparse time index: whole batches ``byte_start..byte_end`` of the
    segment object, holding offsets ``start_offset..end_offset`` of the chain.

    ``max_ts`` is the largest batch max timestamp in the interval (what the broker's
    ``.timeindex`` records); ``record_max_ts`` the largest timestamp of an actual record (they
    differ only when compaction left an empty batch that kept its max timestamp);
    ``running_max_ts`` the maximum of ``max_ts`` over the partition's chain up to and including
    this interval.
    """

    __tablename__ = "time_index"
    __table_args__ = (
        Index("ix_time_index_running", "partition_id", "running_max_ts", "start_offset"),
        {"sqlite_with_rowid": False},
    )

    partition_id: Mapped[int] = mapped_column(ForeignKey("partitions.id"), primary_key=True)
    start_offset: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    end_offset: Mapped[int] = mapped_column(BigInteger)
    segment_id: Mapped[int] = mapped_column(ForeignKey("segments.id"))
    byte_start: Mapped[int] = mapped_column(BigInteger)
    byte_end: Mapped[int] = mapped_column(BigInteger)
    max_ts: Mapped[int] = mapped_column(BigInteger)
    record_max_ts: Mapped[int] = mapped_column(BigInteger)
    running_max_ts: Mapped[int] = mapped_column(BigInteger)
    record_count: Mapped[int] = mapped_column(BigInteger)


class HistogramBucket(Base):
    """Data records and batch bytes of one segment version whose batch max timestamp falls in
    ``[bucket_ms, bucket_ms + resolution)`` (only the chain's part of the segment)."""

    __tablename__ = "histogram"
    __table_args__ = ({"sqlite_with_rowid": False},)

    partition_id: Mapped[int] = mapped_column(ForeignKey("partitions.id"), primary_key=True)
    bucket_ms: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    segment_id: Mapped[int] = mapped_column(
        ForeignKey("segments.id"), primary_key=True, autoincrement=False
    )
    records: Mapped[int] = mapped_column(BigInteger)
    bytes: Mapped[int] = mapped_column(BigInteger)


class OffsetCommitRow(Base):
    """One offset commit (or offset tombstone, ``kind='delete'``) read from the chain of an
    archived ``__consumer_offsets`` partition (``source_partition_id``) at ``log_offset``.

    Transactional commits (``producer_id`` >= 0, from ``TxnOffsetCommit``) take effect only at
    their producer's COMMIT marker: ``txn_state`` is ``pending`` until the marker is cataloged,
    then ``committed`` or ``aborted``. ``effective_offset``/``visible_ts`` are where and when the
    commit took effect (the record itself, or its COMMIT marker); NULL while pending.
    """

    __tablename__ = "offset_commits"
    __table_args__ = (
        UniqueConstraint("source_partition_id", "log_offset", name="uq_offset_commits_log"),
        Index("ix_offset_commits_group", "cluster", "group_id", "visible_ts"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cluster: Mapped[str] = mapped_column(String(255))
    group_id: Mapped[str] = mapped_column(String(1024))
    topic: Mapped[str] = mapped_column(String(255))
    partition: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    committed_offset: Mapped[int] = mapped_column(BigInteger)
    leader_epoch: Mapped[int] = mapped_column(Integer)
    metadata_text: Mapped[str] = mapped_column(Text)
    commit_timestamp: Mapped[int] = mapped_column(BigInteger)
    expire_timestamp: Mapped[int] = mapped_column(BigInteger)
    source_partition_id: Mapped[int] = mapped_column(ForeignKey("partitions.id"))
    segment_id: Mapped[int] = mapped_column(ForeignKey("segments.id"), index=True)
    log_offset: Mapped[int] = mapped_column(BigInteger)
    record_timestamp: Mapped[int] = mapped_column(BigInteger)
    producer_id: Mapped[int] = mapped_column(BigInteger)
    txn_state: Mapped[str] = mapped_column(String(16))
    effective_offset: Mapped[int | None] = mapped_column(BigInteger)
    visible_ts: Mapped[int | None] = mapped_column(BigInteger)


class TxnMarker(Base):
    """A COMMIT/ABORT marker read from an archived ``__consumer_offsets`` partition."""

    __tablename__ = "txn_markers"
    __table_args__ = ({"sqlite_with_rowid": False},)

    source_partition_id: Mapped[int] = mapped_column(ForeignKey("partitions.id"), primary_key=True)
    log_offset: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    producer_id: Mapped[int] = mapped_column(BigInteger)
    committed: Mapped[int] = mapped_column(Integer)
    timestamp: Mapped[int] = mapped_column(BigInteger)
    segment_id: Mapped[int] = mapped_column(ForeignKey("segments.id"), index=True)


class BuildRun(Base):
    """One catalog build: when, where from, and what it added (``summary`` is JSON).

    ``status`` is ``running`` while it works, then ``done``, ``failed`` (it stopped on an
    error) or ``stale`` (it was killed: a later build found it ``running`` with its owner gone,
    see :mod:`kafka_archive.catalog.problems`). ``owner_host``/``owner_pid`` name the process
    that runs it and ``heartbeat_ms`` is when it last showed it was alive.
    """

    __tablename__ = "build_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cluster: Mapped[str | None] = mapped_column(String(255))
    store_uri: Mapped[str] = mapped_column(String(1024))
    started_at_ms: Mapped[int] = mapped_column(BigInteger)
    finished_at_ms: Mapped[int | None] = mapped_column(BigInteger)
    status: Mapped[str] = mapped_column(String(16))
    summary: Mapped[str] = mapped_column(Text)
    owner_host: Mapped[str | None] = mapped_column(String(255))
    owner_pid: Mapped[int | None] = mapped_column(Integer)
    heartbeat_ms: Mapped[int | None] = mapped_column(BigInteger)


class IntegrityProblem(Base):
    """An archived object or manifest the catalog refused, and why: never served, always shown.

    ``kind``: ``corrupt`` (the object's bytes fail a checksum or do not parse: ``position`` is
    the byte where), ``misfiled`` (the bytes are sound but do not belong where the manifest says:
    another partition's object, offsets or leader epochs outside the manifest's), ``unreadable-
    manifest`` (not JSON, or fails its schema), ``missing`` (the object is gone or its size or
    checksum changed since it was cataloged; found by ``catalog verify``). ``subject_key`` is the
    object key (or the manifest key when there is no usable object key); one row per
    ``(subject_key, kind)``: seeing a problem again updates ``last_seen_ms``; a build that
    catalogs the subject cleanly deletes its rows. ``cluster``/``topic``/``partition`` and
    ``start_offset``/``end_offset`` (exclusive) say where the manifest claims the bytes belong,
    NULL when not known.
    """

    __tablename__ = "integrity_problems"
    __table_args__ = (
        UniqueConstraint("subject_key", "kind", name="uq_integrity_problems_subject"),
        Index("ix_integrity_problems_where", "cluster", "topic", "partition"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(32))
    subject_key: Mapped[str] = mapped_column(String(1024))
    manifest_key: Mapped[str | None] = mapped_column(String(1024))
    object_key: Mapped[str | None] = mapped_column(String(1024))
    cluster: Mapped[str | None] = mapped_column(String(255))
    topic: Mapped[str | None] = mapped_column(String(255))
    partition: Mapped[int | None] = mapped_column(Integer)
    start_offset: Mapped[int | None] = mapped_column(BigInteger)
    end_offset: Mapped[int | None] = mapped_column(BigInteger)
    position: Mapped[int | None] = mapped_column(BigInteger)
    reason: Mapped[str] = mapped_column(Text)
    detected_by: Mapped[str] = mapped_column(String(16))
    first_seen_ms: Mapped[int] = mapped_column(BigInteger)
    last_seen_ms: Mapped[int] = mapped_column(BigInteger)


class FollowedCommitRow(Base):
    """One offset commit (or offset tombstone, ``kind='delete'``) that the follower read from
    partition ``source_partition`` of ``__consumer_offsets`` at ``log_offset``.

    The follower reads ``read_committed``: a commit written inside a transaction appears only
    once its producer committed, and aborted ones never. ``record_timestamp`` (the record's own
    timestamp, set by the group coordinator when it appended the commit) is when the commit is
    taken to be in effect. Unique per ``(cluster, source_partition, log_offset)``: re-reading a
    record adds nothing.
    """

    __tablename__ = "followed_commits"
    __table_args__ = (
        UniqueConstraint(
            "cluster", "source_partition", "log_offset", name="uq_followed_commits_log"
        ),
        Index("ix_followed_commits_group", "cluster", "group_id", "record_timestamp"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cluster: Mapped[str] = mapped_column(String(255))
    group_id: Mapped[str] = mapped_column(String(1024))
    topic: Mapped[str] = mapped_column(String(255))
    partition: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(16))
    committed_offset: Mapped[int] = mapped_column(BigInteger)
    leader_epoch: Mapped[int] = mapped_column(Integer)
    metadata_text: Mapped[str] = mapped_column(Text)
    commit_timestamp: Mapped[int] = mapped_column(BigInteger)
    expire_timestamp: Mapped[int] = mapped_column(BigInteger)
    source_partition: Mapped[int] = mapped_column(Integer)
    log_offset: Mapped[int] = mapped_column(BigInteger)
    record_timestamp: Mapped[int] = mapped_column(BigInteger)
    followed_at_ms: Mapped[int] = mapped_column(BigInteger)


class FollowerPosition(Base):
    """How far the follower has read partition ``source_partition`` of a cluster's
    ``__consumer_offsets``: every record before ``next_offset`` is reflected in
    ``followed_commits``. Updated in the same transaction as the rows it covers."""

    __tablename__ = "offsets_follower_positions"
    __table_args__ = ({"sqlite_with_rowid": False},)

    cluster: Mapped[str] = mapped_column(String(255), primary_key=True)
    source_partition: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    next_offset: Mapped[int] = mapped_column(BigInteger)
    records_read: Mapped[int] = mapped_column(BigInteger)
    commits_recorded: Mapped[int] = mapped_column(BigInteger)
    updated_at_ms: Mapped[int] = mapped_column(BigInteger)


class PrunedRange(Base):
    """Offsets ``first_offset..last_offset`` (inclusive) of one partition that retention
    policy ``policy`` removed from the archive, with the time span of their records.

    Written *before* any object is deleted (``status`` ``planned``, ``objects`` the JSON list
    of every key to delete, manifests first), then ``done`` with ``pruned_at_ms`` once every
    object is gone; a prune that dies in between leaves a ``planned`` row that the next prune
    completes. ``segments``/``bytes``: the segment versions and stored bytes it removed.
    """

    __tablename__ = "pruned_ranges"
    __table_args__ = (
        Index("ix_pruned_ranges_where", "cluster", "topic", "partition", "first_offset"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cluster: Mapped[str] = mapped_column(String(255))
    topic: Mapped[str] = mapped_column(String(255))
    partition: Mapped[int] = mapped_column(Integer)
    first_offset: Mapped[int] = mapped_column(BigInteger)
    last_offset: Mapped[int] = mapped_column(BigInteger)
    first_timestamp: Mapped[int] = mapped_column(BigInteger)
    max_timestamp: Mapped[int] = mapped_column(BigInteger)
    policy: Mapped[str] = mapped_column(String(255))
    reason: Mapped[str] = mapped_column(Text)
    segments: Mapped[int] = mapped_column(Integer)
    bytes: Mapped[int] = mapped_column(BigInteger)
    objects: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))
    planned_at_ms: Mapped[int] = mapped_column(BigInteger)
    pruned_at_ms: Mapped[int | None] = mapped_column(BigInteger)


class ObjectLease(Base):
    """Offsets ``first_offset..last_offset`` (inclusive) of one partition that ``holder`` (a
    replay or export, e.g. ``replay:r-0123...``) needs: prune deletes no object of them while
    the lease is live.

    A lease is live until ``expires_at_ms``; a holder renews it (``heartbeat_ms``) while it
    works. ``pid`` > 0 ties it to a process on ``host``: when that process is gone the lease
    is stale at once; ``pid`` 0 is a queued job's lease, live until it expires.
    """

    __tablename__ = "object_leases"
    __table_args__ = (
        Index("ix_object_leases_where", "cluster", "topic", "partition"),
        Index("ix_object_leases_holder", "holder"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    holder: Mapped[str] = mapped_column(String(255))
    cluster: Mapped[str] = mapped_column(String(255))
    topic: Mapped[str] = mapped_column(String(255))
    partition: Mapped[int] = mapped_column(Integer)
    first_offset: Mapped[int] = mapped_column(BigInteger)
    last_offset: Mapped[int] = mapped_column(BigInteger)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    acquired_at_ms: Mapped[int] = mapped_column(BigInteger)
    heartbeat_ms: Mapped[int] = mapped_column(BigInteger)
    expires_at_ms: Mapped[int] = mapped_column(BigInteger)
