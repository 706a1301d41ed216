"""The catalog's tables as typed ORM classes (SQLAlchemy 2), mapped onto the Core tables of
:mod:`kafka_archive.catalog.tables` (``__table__``): the columns are declared there once, the
annotations here only type the attributes. The schema itself is created by the Alembic
migrations in :mod:`kafka_archive.catalog.migrations` (a test compares the two). The read
side's hot path (``catalog offsets``) uses the Core tables and never imports this module.

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
* ``coverage_gaps``: the partition's holes, overlaps and corrupt segments as ``catalog gaps``
  lists them, kept by every write that changes the partition's segments
  (:mod:`kafka_archive.catalog.coverage`), so reading them does not walk every segment;
  ``partition_totals``: what ``catalog topics`` shows per partition, kept the same way.
* ``offset_commits`` / ``txn_markers``: the decoded history of ``__consumer_offsets``, from
  archived segments.
* ``pruned_ranges``: offsets a retention policy deleted from the archive, recorded before their
  objects are deleted (``planned``), then ``done``; ``object_leases``: offset ranges a running
  or queued replay or export needs, which prune never deletes (:mod:`kafka_archive.catalog.prune`,
  :mod:`kafka_archive.catalog.leases`).
* ``followed_commits`` / ``offsets_follower_positions``: the same history as the continuous
  reader of ``__consumer_offsets`` (:mod:`kafka_archive.offsets_follower.follower`) saw it, and how
  far it read each partition (written in the same transaction as its rows).

All timestamps are epoch milliseconds (BIGINT); -1 means "none", as in Kafka.
"""

from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase, Mapped

from kafka_archive.catalog import tables

__all__ = [
    "Base",
    "BuildRun",
    "ChainPiece",
    "CoverageGap",
    "FollowedCommitRow",
    "FollowerPosition",
    "HistogramBucket",
    "IntegrityProblem",
    "ObjectLease",
    "OffsetCommitRow",
    "Partition",
    "PartitionStability",
    "PartitionTotals",
    "PrunedRange",
    "Segment",
    "TimeIndexEntry",
    "TxnMarker",
]


class Base(DeclarativeBase):
    """Declarative base of every catalog table: its metadata is :data:`tables.metadata`, which
    the replay's tables (:mod:`kafka_archive.replay.bookkeeping.tables`, mapped by
    :mod:`kafka_archive.replay.bookkeeping.models`) join."""

    metadata = tables.metadata


class Partition(Base):
    """One ``cluster/topic/partition`` the archive holds data for."""

    __table__ = tables.partitions

    id: Mapped[int]
    cluster: Mapped[str]
    topic: Mapped[str]
    partition: Mapped[int]


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

    __table__ = tables.segments

    id: Mapped[int]
    partition_id: Mapped[int]
    manifest_key: Mapped[str]
    object_key: Mapped[str]
    sha256: Mapped[str | None]
    broker_id: Mapped[int | None]
    log_dir: Mapped[str | None]
    archived_at_ms: Mapped[int]
    base_offset: Mapped[int]
    end_offset: Mapped[int]
    first_offset: Mapped[int]
    last_offset: Mapped[int]
    first_timestamp: Mapped[int]
    max_timestamp: Mapped[int]
    offset_of_max_timestamp: Mapped[int]
    record_count: Mapped[int]
    batch_count: Mapped[int]
    size_bytes: Mapped[int]
    codecs: Mapped[str]
    magics: Mapped[str]
    transactional_batches: Mapped[int]
    control_batches: Mapped[int]
    epoch_runs: Mapped[str]
    status: Mapped[str]
    error: Mapped[str | None]
    cataloged_at_ms: Mapped[int]
    topic_id: Mapped[str | None]
    txn_events: Mapped[str | None]


class ChainPiece(Base):
    """Offsets ``lo..hi`` (inclusive) of the canonical chain, served by ``segment_id``."""

    __table__ = tables.chain_pieces

    partition_id: Mapped[int]
    lo: Mapped[int]
    hi: Mapped[int]
    segment_id: Mapped[int]


class CoverageGap(Base):
    """One coverage problem of a partition's segments (``missing``, ``overlap``,
    ``divergent`` or ``corrupt``; :class:`~kafka_archive.catalog.gaps.GapEntry`), the
    ``seq``-th in the partition's ``catalog gaps`` order, offsets ``start_offset..end_offset``
    (inclusive), ``detail`` the entry's JSON detail. Derived from the ``segments`` rows:
    rewritten whole, per partition, in the transaction that changes them
    (:func:`kafka_archive.catalog.coverage.refresh_coverage`)."""

    __table__ = tables.coverage_gaps

    partition_id: Mapped[int]
    seq: Mapped[int]
    kind: Mapped[str]
    start_offset: Mapped[int]
    end_offset: Mapped[int]
    detail: Mapped[str]


class PartitionTotals(Base):
    """What ``catalog topics`` shows of one partition that has segment rows, kept like
    :class:`CoverageGap` (:func:`kafka_archive.catalog.totals.refresh_totals`): the serving
    (``canonical``/``partial``) segments' count, lowest first offset, highest last offset and
    largest max timestamp, the first timestamp of the chain's lowest piece, the
    histogram's records and bytes (-1: none), and the JSON list of the topic ids of its
    segments that are not pruned, serving or not (sorted)."""

    __table__ = tables.partition_totals

    partition_id: Mapped[int]
    segments: Mapped[int]
    first_offset: Mapped[int]
    last_offset: Mapped[int]
    first_timestamp: Mapped[int]
    max_timestamp: Mapped[int]
    records: Mapped[int]
    bytes: Mapped[int]
    topic_ids: Mapped[str]


class PartitionStability(Base):
    """Where a ``read_committed`` consumer of one partition's archived chain would stop: the
    **last stable offset** (``stable_offset``, the first offset of the earliest transaction
    still open at the chain's end; ``end_offset`` when none is), for the chain that ended at
    ``end_offset`` (exclusive) when it was computed, and the open transactions as JSON
    ``[[producer_id, first_offset], ...]``. Computed from the archived bytes by the catalog
    build (:mod:`kafka_archive.catalog.stability`); a replay or export never delivers records
    at or above it (they end ``incomplete``)."""

    __table__ = tables.partition_stability

    partition_id: Mapped[int]
    stable_offset: Mapped[int]
    end_offset: Mapped[int]
    open_txns: Mapped[str]
    computed_at_ms: Mapped[int]


class TimeIndexEntry(Base):
    """One interval of the sparse time index: whole batches ``byte_start..byte_end`` of the
    segment object, holding offsets ``start_offset..end_offset`` of the chain.

    ``max_ts`` is the largest batch max timestamp in the interval (what the broker's
    ``.timeindex`` records); ``record_max_ts`` the largest timestamp of an actual record (they
    differ only when compaction left an empty batch that kept its max timestamp);
    ``running_max_ts`` the maximum of ``max_ts`` over the partition's chain up to and including
    this interval.
    """

    __table__ = tables.time_index

    partition_id: Mapped[int]
    start_offset: Mapped[int]
    end_offset: Mapped[int]
    segment_id: Mapped[int]
    byte_start: Mapped[int]
    byte_end: Mapped[int]
    max_ts: Mapped[int]
    record_max_ts: Mapped[int]
    running_max_ts: Mapped[int]
    record_count: Mapped[int]


class HistogramBucket(Base):
    """Data records and batch bytes of one segment version whose batch max timestamp falls in
    ``[bucket_ms, bucket_ms + resolution)`` (only the chain's part of the segment)."""

    __table__ = tables.histogram

    partition_id: Mapped[int]
    bucket_ms: Mapped[int]
    segment_id: Mapped[int]
    records: Mapped[int]
    bytes: Mapped[int]


class _CommitFields:
    """The attributes of one offset commit, shared by :class:`OffsetCommitRow` and
    :class:`FollowedCommitRow` (the columns: ``tables._commit_columns``)."""

    id: Mapped[int]
    cluster: Mapped[str]
    group_id: Mapped[str]
    topic: Mapped[str]
    partition: Mapped[int]
    kind: Mapped[str]
    committed_offset: Mapped[int]
    leader_epoch: Mapped[int]
    metadata_text: Mapped[str]
    commit_timestamp: Mapped[int]
    expire_timestamp: Mapped[int]


class OffsetCommitRow(_CommitFields, Base):
    """One offset commit (or offset tombstone, ``kind='delete'``) read from the chain of an
    archived ``__consumer_offsets`` partition (``source_partition_id``) at ``log_offset``.

    Transactional commits (``producer_id`` >= 0, from ``TxnOffsetCommit``) take effect only at
    their producer's COMMIT marker: ``txn_state`` is ``pending`` until the marker is cataloged,
    then ``committed`` or ``aborted``. ``effective_offset``/``visible_ts`` are where and when the
    commit took effect (the record itself, or its COMMIT marker); NULL while pending.
    """

    __table__ = tables.offset_commits

    source_partition_id: Mapped[int]
    segment_id: Mapped[int]
    log_offset: Mapped[int]
    record_timestamp: Mapped[int]
    producer_id: Mapped[int]
    txn_state: Mapped[str]
    effective_offset: Mapped[int | None]
    visible_ts: Mapped[int | None]


class TxnMarker(Base):
    """A COMMIT/ABORT marker read from an archived ``__consumer_offsets`` partition."""

    __table__ = tables.txn_markers

    source_partition_id: Mapped[int]
    log_offset: Mapped[int]
    producer_id: Mapped[int]
    committed: Mapped[int]
    timestamp: Mapped[int]
    segment_id: Mapped[int]


class BuildRun(Base):
    """One catalog build: when, where from, and what it added (``summary`` is JSON).

    ``status`` is ``running`` while it works, then ``done``, ``failed`` (it stopped on an
    error) or ``stale`` (it was killed: a later build found it ``running`` with its owner gone,
    see :mod:`kafka_archive.catalog.problems`). ``owner_host``/``owner_pid`` name the process
    that runs it and ``heartbeat_ms`` is when it last showed it was alive.
    """

    __table__ = tables.build_runs

    id: Mapped[int]
    cluster: Mapped[str | None]
    store_uri: Mapped[str]
    started_at_ms: Mapped[int]
    finished_at_ms: Mapped[int | None]
    status: Mapped[str]
    summary: Mapped[str]
    owner_host: Mapped[str | None]
    owner_pid: Mapped[int | None]
    heartbeat_ms: Mapped[int | None]


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

    __table__ = tables.integrity_problems

    id: Mapped[int]
    kind: Mapped[str]
    subject_key: Mapped[str]
    manifest_key: Mapped[str | None]
    object_key: Mapped[str | None]
    cluster: Mapped[str | None]
    topic: Mapped[str | None]
    partition: Mapped[int | None]
    start_offset: Mapped[int | None]
    end_offset: Mapped[int | None]
    position: Mapped[int | None]
    reason: Mapped[str]
    detected_by: Mapped[str]
    first_seen_ms: Mapped[int]
    last_seen_ms: Mapped[int]


class FollowedCommitRow(_CommitFields, Base):
    """One offset commit (or offset tombstone, ``kind='delete'``) that the follower read from
    partition ``source_partition`` of ``__consumer_offsets`` at ``log_offset``.

    The follower reads ``read_committed``: a commit written inside a transaction appears only
    once its producer committed, and aborted ones never. ``record_timestamp`` is the record's own
    timestamp (set by the group coordinator when it appended the commit); ``visible_ts`` and
    ``effective_offset`` say when and where in the log it took effect: for a transactional
    commit its COMMIT marker's timestamp and offset (found by the follower's raw-batch scan,
    :mod:`kafka_archive.offsets_follower.txn_moments`), else the record's own (NULL in rows
    stored before revision ``0006_followed_commit_markers``: read as the record's own). Where
    the archive resolved the same record, its row counts (``catalog.queries.group_offsets``). Unique
    per ``(cluster, source_partition, log_offset)``: re-reading a record adds nothing.
    """

    __table__ = tables.followed_commits

    source_partition: Mapped[int]
    log_offset: Mapped[int]
    record_timestamp: Mapped[int]
    followed_at_ms: Mapped[int]
    effective_offset: Mapped[int | None]
    visible_ts: Mapped[int | None]


class FollowerPosition(Base):
    """How far the follower has read partition ``source_partition`` of a cluster's
    ``__consumer_offsets``: every record before ``next_offset`` is reflected in
    ``followed_commits``. Updated in the same transaction as the rows it covers."""

    __table__ = tables.offsets_follower_positions

    cluster: Mapped[str]
    source_partition: Mapped[int]
    next_offset: Mapped[int]
    records_read: Mapped[int]
    commits_recorded: Mapped[int]
    updated_at_ms: Mapped[int]


class PrunedRange(Base):
    """Offsets ``first_offset..last_offset`` (inclusive) of one partition that retention
    policy ``policy`` removed from the archive, with the time span of their records.

    Written *before* any object is deleted (``status`` ``planned``, ``objects`` the JSON list
    of every key to delete, manifests first), then ``done`` with ``pruned_at_ms`` once every
    object is gone; a prune that dies in between leaves a ``planned`` row that the next prune
    completes. ``segments``/``bytes``: the segment versions and stored bytes it removed.
    """

    __table__ = tables.pruned_ranges

    id: Mapped[int]
    cluster: Mapped[str]
    topic: Mapped[str]
    partition: Mapped[int]
    first_offset: Mapped[int]
    last_offset: Mapped[int]
    first_timestamp: Mapped[int]
    max_timestamp: Mapped[int]
    policy: Mapped[str]
    reason: Mapped[str]
    segments: Mapped[int]
    bytes: Mapped[int]
    objects: Mapped[str]
    status: Mapped[str]
    planned_at_ms: Mapped[int]
    pruned_at_ms: Mapped[int | None]


class ObjectLease(Base):
    """Offsets ``first_offset..last_offset`` (inclusive) of one partition that ``holder`` (a
    replay or export, e.g. ``replay:r-0123...``) needs: prune deletes no object of them while
    the lease is live.

    A lease is live until ``expires_at_ms``; a holder renews it (``heartbeat_ms``) while it
    works. ``pid`` > 0 ties it to a process on ``host``: when that process is gone the lease
    is stale at once; ``pid`` 0 is a queued job's lease, live until it expires.
    """

    __table__ = tables.object_leases

    id: Mapped[int]
    holder: Mapped[str]
    cluster: Mapped[str]
    topic: Mapped[str]
    partition: Mapped[int]
    first_offset: Mapped[int]
    last_offset: Mapped[int]
    host: Mapped[str]
    pid: Mapped[int]
    acquired_at_ms: Mapped[int]
    heartbeat_ms: Mapped[int]
    expires_at_ms: Mapped[int]
