"""What a run did: :class:`ArchiveReport` (returned by the CLI and the DAG, and logged).

A report counts, for one run:

* **archived**: segments whose manifest this run wrote, their total bytes (``bytes_archived``:
  every file of the segment) and what was actually sent (``bytes_uploaded``,
  ``files_uploaded``; files already in the store from an interrupted run are ``files_reused``
  and not sent again);
* **skipped**, per :class:`~kafka_archive.archive.discovery.SkipReason`: already archived,
  active, transient, above the recovery point / high watermark, other replica, ...;
* **failed**: segments that could not be archived (``quarantined`` corrupt segments included)
  and log dirs that could not be read at all; a report with failures is not ``ok`` and the CLI
  exits non-zero / the Airflow task fails;
* **lag** per broker (:class:`BrokerLag`): the age of the oldest rolled segment that is still not
  archived after the run, measured from the **modification time of its ``.log``** (the time of
  its last append, i.e. roughly when its newest record arrived). The file time is used rather
  than the records' max timestamp because it needs no scan and does not depend on
  producer-supplied timestamps, which may be far in the past or future. Segments whose range is
  archived from another replica do not count; segments gated by the recovery point or high
  watermark, changed, failed or (in a dry run) planned do.

Reports of several log dirs (mapped Airflow tasks) are combined with :meth:`ArchiveReport.merge`.

Concurrent runs: ``segments_archived``, ``files_uploaded`` and ``bytes_uploaded`` count only
what this run itself created. Two archivers over the same log dirs into the same store
therefore add up to exactly what the store holds: of two runs racing on one key, the store's
``put_if_absent`` lets exactly one create it (``LocalStore`` publishes with link(2), ``S3Store``
writes with ``If-None-Match: *``); the other reports the file as reused and the segment as
``already_archived``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import Field

from kafka_archive.archive.discovery import (
    PENDING_REASONS,
    ProblemInfo,
    SkippedItem,
)
from kafka_archive.archive.manifest import utc_now
from kafka_archive.frozen import FrozenModel

__all__ = [
    "REPORT_FORMAT_VERSION",
    "ArchiveReport",
    "BrokerLag",
    "LogDirFailure",
    "SegmentOutcome",
    "SegmentStatus",
    "compute_lag",
]

log = logging.getLogger(__name__)

REPORT_FORMAT_VERSION = 1


class SegmentStatus(StrEnum):
    ARCHIVED = "archived"
    #: dry run: would be archived
    PLANNED = "planned"
    SKIPPED = "skipped"
    #: could not be archived (store errors etc.); retried by the next run
    FAILED = "failed"
    #: corrupt: its bytes and an error record were put under the quarantine prefix
    QUARANTINED = "quarantined"


class SegmentOutcome(FrozenModel):
    """What happened to one planned segment."""

    cluster: str
    broker_id: int
    log_dir: str
    topic: str
    partition: int
    base_offset: int
    end_offset: int
    status: SegmentStatus
    reason: str | None = None
    detail: str = ""
    manifest_key: str | None = None
    quarantine_prefix: str | None = None
    #: total size of the segment's files
    segment_bytes: int = 0
    bytes_uploaded: int = 0
    files_uploaded: int = 0
    files_reused: int = 0
    log_mtime_ms: int = 0
    error: ProblemInfo | None = None

    @property
    def failed(self) -> bool:
        return self.status in (SegmentStatus.FAILED, SegmentStatus.QUARANTINED)


class LogDirFailure(FrozenModel):
    """A log dir that could not be discovered or archived as a whole."""

    cluster: str
    broker_id: int
    log_dir: str
    error: ProblemInfo


class PendingSegment(FrozenModel):
    topic: str
    partition: int
    base_offset: int
    log_dir: str
    reason: str
    mtime_ms: int


class BrokerLag(FrozenModel):
    """Archive lag of one broker after the run."""

    cluster: str
    broker_id: int
    #: rolled segments not archived yet (gated, changed, failed, or planned in a dry run)
    pending_segments: int
    #: seconds since the oldest pending segment's ``.log`` was last modified (0 if none)
    lag_seconds: float
    oldest_pending: PendingSegment | None = None
    basis: str = "log_mtime"


class ArchiveReport(FrozenModel):
    """The result of one archive run (one or more log dirs)."""

    format_version: int = REPORT_FORMAT_VERSION
    clusters: list[str]
    store_uri: str
    dry_run: bool = False
    started_at: datetime
    finished_at: datetime
    log_dirs: int = 0
    segments_archived: int = 0
    bytes_archived: int = 0
    bytes_uploaded: int = 0
    files_uploaded: int = 0
    files_reused: int = 0
    segments_planned: int = 0
    segments_failed: int = 0
    segments_quarantined: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    lag: list[BrokerLag] = Field(default_factory=list)
    failures: list[SegmentOutcome] = Field(default_factory=list)
    log_dir_failures: list[LogDirFailure] = Field(default_factory=list)
    archived: list[SegmentOutcome] = Field(default_factory=list)
    #: dry run: the segments it would archive (``archive --dry-run`` lists them)
    planned: list[SegmentOutcome] = Field(default_factory=list)
    skipped_items: list[SkippedItem] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No segment failed and every log dir was readable."""
        return self.segments_failed == 0 and not self.log_dir_failures

    @property
    def new_manifest_keys(self) -> list[str]:
        return [o.manifest_key for o in self.archived if o.manifest_key]

    @classmethod
    def build(
        cls,
        *,
        clusters: Sequence[str],
        store_uri: str,
        dry_run: bool,
        started_at: datetime,
        log_dirs: int,
        outcomes: Iterable[SegmentOutcome],
        skipped: Iterable[SkippedItem],
        log_dir_failures: Iterable[LogDirFailure] = (),
        brokers: Iterable[tuple[str, int]] = (),
        warnings: Iterable[str] = (),
        now: datetime | None = None,
    ) -> ArchiveReport:
        """Assemble a report from segment outcomes and skipped items; ``brokers`` lists every
        ``(cluster, broker_id)`` that took part (each gets a lag entry, 0 when up to date)."""
        outcomes = list(outcomes)
        all_skipped = list(skipped)
        counts: Counter[str] = Counter(s.reason.value for s in all_skipped)
        for o in outcomes:
            if o.status is SegmentStatus.SKIPPED and o.reason:
                counts[o.reason] += 1
        archived = [o for o in outcomes if o.status is SegmentStatus.ARCHIVED]
        failed = [o for o in outcomes if o.failed]
        finished = now or utc_now()
        return cls(
            clusters=sorted(set(clusters)),
            store_uri=store_uri,
            dry_run=dry_run,
            started_at=started_at,
            finished_at=finished,
            log_dirs=log_dirs,
            segments_archived=len(archived),
            bytes_archived=sum(o.segment_bytes for o in archived),
            bytes_uploaded=sum(o.bytes_uploaded for o in outcomes),
            files_uploaded=sum(o.files_uploaded for o in outcomes),
            files_reused=sum(o.files_reused for o in outcomes),
            segments_planned=sum(1 for o in outcomes if o.status is SegmentStatus.PLANNED),
            segments_failed=len(failed),
            segments_quarantined=sum(1 for o in failed if o.status is SegmentStatus.QUARANTINED),
            skipped=dict(sorted(counts.items())),
            lag=compute_lag(outcomes, all_skipped, brokers, finished),
            failures=failed,
            log_dir_failures=list(log_dir_failures),
            archived=archived,
            planned=[o for o in outcomes if o.status is SegmentStatus.PLANNED],
            skipped_items=all_skipped,
            warnings=list(warnings),
        )

    @classmethod
    def merge(cls, reports: Sequence[ArchiveReport]) -> ArchiveReport:
        """Combine the reports of several log dirs / clusters of one run."""
        if not reports:
            raise ValueError("nothing to merge")
        lags: dict[tuple[str, int], BrokerLag] = {}
        for r in reports:
            for lag in r.lag:
                k = (lag.cluster, lag.broker_id)
                prev = lags.get(k)
                if prev is None:
                    lags[k] = lag
                else:
                    oldest = min(
                        (x for x in (prev.oldest_pending, lag.oldest_pending) if x is not None),
                        key=lambda p: p.mtime_ms,
                        default=None,
                    )
                    lags[k] = BrokerLag(
                        cluster=lag.cluster,
                        broker_id=lag.broker_id,
                        pending_segments=prev.pending_segments + lag.pending_segments,
                        lag_seconds=max(prev.lag_seconds, lag.lag_seconds),
                        oldest_pending=oldest,
                    )
        skipped: Counter[str] = Counter()
        for r in reports:
            skipped.update(r.skipped)
        return cls(
            clusters=sorted({c for r in reports for c in r.clusters}),
            store_uri=",".join(sorted({r.store_uri for r in reports})),
            dry_run=any(r.dry_run for r in reports),
            started_at=min(r.started_at for r in reports),
            finished_at=max(r.finished_at for r in reports),
            log_dirs=sum(r.log_dirs for r in reports),
            segments_archived=sum(r.segments_archived for r in reports),
            bytes_archived=sum(r.bytes_archived for r in reports),
            bytes_uploaded=sum(r.bytes_uploaded for r in reports),
            files_uploaded=sum(r.files_uploaded for r in reports),
            files_reused=sum(r.files_reused for r in reports),
            segments_planned=sum(r.segments_planned for r in reports),
            segments_failed=sum(r.segments_failed for r in reports),
            segments_quarantined=sum(r.segments_quarantined for r in reports),
            skipped=dict(sorted(skipped.items())),
            lag=sorted(lags.values(), key=lambda x: (x.cluster, x.broker_id)),
            failures=[f for r in reports for f in r.failures],
            log_dir_failures=[f for r in reports for f in r.log_dir_failures],
            archived=[a for r in reports for a in r.archived],
            planned=[p for r in reports for p in r.planned],
            skipped_items=[s for r in reports for s in r.skipped_items],
            warnings=[w for r in reports for w in r.warnings],
        )

    def summary_line(self) -> str:
        skipped = ", ".join(f"{k}={v}" for k, v in self.skipped.items()) or "none"
        lag = (
            ", ".join(
                f"{x.cluster}/broker {x.broker_id}: {x.lag_seconds:.0f}s ({x.pending_segments} "
                "pending)"
                for x in self.lag
            )
            or "none"
        )
        verb = "would archive" if self.dry_run else "archived"
        planned = self.segments_planned if self.dry_run else self.segments_archived
        return (
            f"{verb} {planned} segment(s), {self.bytes_archived} bytes "
            f"({self.bytes_uploaded} uploaded, {self.files_reused} file(s) reused); "
            f"failed {self.segments_failed} (quarantined {self.segments_quarantined}), "
            f"log dirs failed {len(self.log_dir_failures)}; skipped: {skipped}; lag: {lag}"
        )

    def log_summary(self, logger: logging.Logger | None = None) -> None:
        """Log the summary, each failure with what to do, and warnings."""
        lg = logger or log
        lg.info("kafka-archive: %s", self.summary_line())
        for f in self.failures:
            lg.error(
                "kafka-archive: %s %s-%d segment %d (broker %d, %s): %s %s",
                f.status.value,
                f.topic,
                f.partition,
                f.base_offset,
                f.broker_id,
                f.log_dir,
                f.detail,
                f"[quarantine: {f.quarantine_prefix}]" if f.quarantine_prefix else "",
            )
        for d in self.log_dir_failures:
            lg.error(
                "kafka-archive: log dir %s (broker %d) failed: %s: %s",
                d.log_dir,
                d.broker_id,
                d.error.error,
                d.error.message,
            )
        for w in self.warnings:
            lg.warning("kafka-archive: %s", w)

    def to_json_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["ok"] = self.ok
        return data


def compute_lag(
    outcomes: Sequence[SegmentOutcome],
    skipped: Sequence[SkippedItem],
    brokers: Iterable[tuple[str, int]],
    now: datetime,
) -> list[BrokerLag]:
    """Per broker: pending rolled segments and the age of the oldest (see module docs)."""
    pending: dict[tuple[str, int], list[PendingSegment]] = {k: [] for k in brokers}
    for item in skipped:
        if (
            item.reason in PENDING_REASONS
            and item.mtime_ms is not None
            and item.cluster is not None
            and item.broker_id is not None
        ):
            pending.setdefault((item.cluster, item.broker_id), []).append(
                PendingSegment(
                    topic=item.topic or "",
                    partition=item.partition or 0,
                    base_offset=item.base_offset or 0,
                    log_dir=item.log_dir or "",
                    reason=item.reason.value,
                    mtime_ms=item.mtime_ms,
                )
            )
    for o in outcomes:
        is_pending = (
            o.failed
            or o.status is SegmentStatus.PLANNED
            or (
                o.status is SegmentStatus.SKIPPED and o.reason in {r.value for r in PENDING_REASONS}
            )
        )
        if is_pending:
            pending.setdefault((o.cluster, o.broker_id), []).append(
                PendingSegment(
                    topic=o.topic,
                    partition=o.partition,
                    base_offset=o.base_offset,
                    log_dir=o.log_dir,
                    reason=o.reason or o.status.value,
                    mtime_ms=o.log_mtime_ms,
                )
            )
    now_ms = now.timestamp() * 1000
    out = []
    for (cluster, broker_id), items in sorted(pending.items()):
        oldest = min(items, key=lambda p: p.mtime_ms, default=None)
        out.append(
            BrokerLag(
                cluster=cluster,
                broker_id=broker_id,
                pending_segments=len(items),
                lag_seconds=max(0.0, (now_ms - oldest.mtime_ms) / 1000) if oldest else 0.0,
                oldest_pending=oldest,
            )
        )
    return out
