"""Discovery: which segments of one broker log dir may be archived now, and why others may not.

:func:`discover_log_dir` lists a broker log directory (``log.dirs`` entry) and returns a
:class:`LogDirDiscovery`: the archivable segments (:class:`SegmentCandidate`) and every thing it
passed over with the reason (:class:`SkippedItem`). Nothing is written anywhere.

A segment is a candidate only if all of these hold:

* its partition directory is live (``topic-N``; not ``-delete``/``-future``/``-stray``, and
  no cleaner ``.swap`` file is present: a swap is the moment the cleaner replaces segments,
  when the listing is inconsistent);
* it is **rolled** (not the segment with the highest base offset, which the broker appends to)
  and not in a transient state (``.deleted``, ``.cleaned``, ``.swap`` files are never taken);
* its whole offset range is **flushed and committed**: every offset of a rolled segment is
  below the next segment's base offset (``end_offset``), and we require ``end_offset <=``
  the partition's recovery point (``recovery-point-offset-checkpoint``: flushed to disk) and
  ``end_offset <=`` its high watermark (``replication-offset-checkpoint``: replicated to the
  ISR). Both files are rewritten periodically by the broker, so they may lag; a lagging value
  is only more conservative. A partition missing from either file is not archived
  (``no_checkpoint``). Using ``end_offset`` rather than the last offset actually held is exact
  except for a segment whose tail was compacted away, which then waits for the checkpoints to
  pass the next base offset (they normally already have). KRaft's ``__cluster_metadata``
  log has no checkpoints: its bound is its newest snapshot's end offset
  (:func:`~kafka_archive.archive.discovery.side_files.metadata_committed_offset`);
* its ``.log`` is not empty.

Each candidate carries the SHA-256 of its ``.log`` (its identity in the store), computed through
a :class:`~kafka_archive.archive.digests.DigestCache` so unchanged segments are not re-read on
every run, plus its companions (``.index``, ``.timeindex``, ``.txnindex``), the producer-state
snapshot taken when it was rolled (``<end_offset>.snapshot``, if still present), the
``leader-epoch-checkpoint`` entries covering its range and the topic id from
``partition.metadata``.

Problems that make a whole log dir unusable (missing directory, unreadable checkpoint, a
``meta.properties`` naming another broker) are returned in ``errors``; they never raise.

Modules: :mod:`~kafka_archive.archive.discovery.model` (what discovery reports),
:mod:`~kafka_archive.archive.discovery.side_files` (checkpoints, epochs, topic id, snapshots),
:mod:`~kafka_archive.archive.discovery.scan` (the walk, :func:`discover_log_dir`). This
package re-exports their public names.
"""

from __future__ import annotations

from kafka_archive.archive.discovery.model import (
    PENDING_REASONS,
    LocalFile,
    LogDirDiscovery,
    ProblemInfo,
    SegmentCandidate,
    SkippedItem,
    SkipReason,
)
from kafka_archive.archive.discovery.scan import discover_log_dir
from kafka_archive.archive.discovery.side_files import (
    HIGH_WATERMARK_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    META_PROPERTIES,
    METADATA_TOPIC,
    PARTITION_METADATA,
    RECOVERY_POINT_CHECKPOINT,
    epochs_for_range,
    snapshot_name,
)

__all__ = [
    "HIGH_WATERMARK_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "METADATA_TOPIC",
    "META_PROPERTIES",
    "PARTITION_METADATA",
    "PENDING_REASONS",
    "RECOVERY_POINT_CHECKPOINT",
    "LocalFile",
    "LogDirDiscovery",
    "ProblemInfo",
    "SegmentCandidate",
    "SkipReason",
    "SkippedItem",
    "discover_log_dir",
    "epochs_for_range",
    "snapshot_name",
]
