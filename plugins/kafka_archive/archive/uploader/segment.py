"""One segment's archiving: re-check, verify, upload its files, then (last) its manifest.

Contract: :func:`archive_segment` runs the steps of :mod:`kafka_archive.archive.uploader` for
one planned segment and returns its outcome (``archived``, ``skipped`` with a reason,
``quarantined``, ``planned`` on a dry run); segment-level problems never raise. Store errors
other than integrity problems propagate for
:func:`~kafka_archive.archive.uploader.log_dir.archive_log_dir` to decide whether the run goes
on.
"""

from __future__ import annotations

import socket
from typing import Final

from kafka_archive.archive.digests import digest_buffer
from kafka_archive.archive.discovery import LocalFile, SkipReason
from kafka_archive.archive.layout import ObjectExtension, object_key
from kafka_archive.archive.manifest import (
    EpochRange,
    FileRole,
    InvalidManifest,
    ManifestFile,
    SegmentManifest,
    SegmentSource,
    parse_manifest,
    utc_now,
)
from kafka_archive.archive.planner import SegmentTask
from kafka_archive.archive.report import SegmentOutcome, SegmentStatus
from kafka_archive.archive.uploader.outcomes import outcome
from kafka_archive.archive.uploader.quarantine_upload import quarantine_segment
from kafka_archive.archive.uploader.scan import LogScan, scan_log
from kafka_archive.archive.uploader.source import (
    SourceChanged,
    SourceFile,
    check_unchanged,
    read_companion,
)
from kafka_archive.store import IntegrityError, ObjectStore
from segment_lib.errors import SegmentError
from segment_lib.producer_snapshot import parse_producer_snapshot

__all__ = ["archive_segment", "archiver_version"]


def archiver_version() -> str:
    """The installed kafka-archive version (recorded in every manifest)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-archive")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


_EXT: Final[dict[FileRole, ObjectExtension]] = {
    "log": ".log",
    "index": ".index",
    "timeindex": ".timeindex",
    "txnindex": ".txnindex",
    "producer_snapshot": ".snapshot",
}


def archive_segment(
    store: ObjectStore,
    task: SegmentTask,
    *,
    dry_run: bool = False,
    hostname: str | None = None,
) -> SegmentOutcome:
    """Archive one planned segment (see :mod:`kafka_archive.archive.uploader`); never raises
    for segment-level problems, which are returned as the outcome. Store errors other than
    integrity problems are re-raised only as outcomes too; :func:`archive_log_dir` decides
    whether to go on."""
    c = task.candidate
    host = hostname or socket.gethostname()
    segment_bytes = sum(
        f.size for f in (c.log, c.index, c.timeindex, c.txnindex, c.snapshot) if f is not None
    )
    if dry_run:
        return outcome(
            task,
            SegmentStatus.PLANNED,
            segment_bytes=segment_bytes,
            reason="dry_run",
            detail="would be archived",
        )
    try:
        check_unchanged(c)
        if store.exists(task.manifest_key):
            return outcome(
                task,
                SegmentStatus.SKIPPED,
                reason=SkipReason.ALREADY_ARCHIVED.value,
                detail="manifest written by an earlier or concurrent run",
            )
        try:
            # The SHA-256 of these bytes is checked by the store against the planned one.
            scan = scan_log(c.log_path, c.base_offset, c.end_offset, expected_sha256=c.log_sha256)
        except FileNotFoundError:
            raise SourceChanged(SkipReason.VANISHED, "deleted since discovery") from None
        except SegmentError as exc:
            check_unchanged(c)
            return quarantine_segment(store, task, exc, c.log_sha256, host)
        check_unchanged(c)
        files = [SourceFile("log", c.log_path, scan.digest, c.base_offset, None)]
        try:
            companions: tuple[tuple[FileRole, LocalFile | None], ...] = (
                ("index", c.index),
                ("timeindex", c.timeindex),
                ("txnindex", c.txnindex),
            )
            for role, lf in companions:
                f = read_companion(c, role, lf)
                if f is not None:
                    files.append(f)
        except SegmentError as exc:
            return quarantine_segment(store, task, exc, c.log_sha256, host)
        warnings = list(c.warnings)
        if c.snapshot is not None:
            snap_path = c.path / c.snapshot.name
            try:
                data = snap_path.read_bytes()
                parse_producer_snapshot(data)
                files.append(
                    SourceFile(
                        "producer_snapshot", snap_path, digest_buffer(data), c.end_offset, data
                    )
                )
            except FileNotFoundError:
                pass  # removed by the broker's snapshot retention meanwhile
            except SegmentError as exc:
                warnings.append(
                    f"producer snapshot {c.snapshot.name} not archived: "
                    f"{exc.with_location(snap_path)}"
                )
        return _upload(store, task, scan, files, warnings, host)
    except SourceChanged as changed:
        return outcome(
            task,
            SegmentStatus.SKIPPED,
            reason=changed.reason.value,
            detail=changed.detail,
            segment_bytes=segment_bytes,
        )


def _upload(
    store: ObjectStore,
    task: SegmentTask,
    scan: LogScan,
    files: list[SourceFile],
    warnings: list[str],
    hostname: str,
) -> SegmentOutcome:
    c = task.candidate
    entries: list[ManifestFile] = []
    uploaded = sent = reused = 0
    for f in files:
        key = object_key(c.cluster, c.topic, c.partition, f.offset, f.digest.sha256, _EXT[f.role])
        try:
            obj, created = store.put_if_absent(
                key, f.data if f.data is not None else f.path, sha256=f.digest.sha256
            )
        except FileNotFoundError:
            raise SourceChanged(
                SkipReason.VANISHED, f"{f.path.name} deleted during upload"
            ) from None
        except IntegrityError:
            check_unchanged(c)  # a source that changed under us is not a store failure
            raise
        if obj.size != f.digest.size or (obj.sha256 is not None and obj.sha256 != f.digest.sha256):
            raise IntegrityError(
                f"store reports size {obj.size} / sha256 {obj.sha256} for {key}, expected "
                f"{f.digest.size} / {f.digest.sha256}",
                uri=store.uri,
                key=key,
            )
        if created:
            uploaded += f.digest.size
            sent += 1
        else:
            reused += 1
        entries.append(
            ManifestFile(
                role=f.role,
                name=f.path.name,
                key=key,
                size=f.digest.size,
                sha256=f.digest.sha256,
                crc32c=f.digest.crc32c,
            )
        )
    manifest = SegmentManifest(
        cluster=c.cluster,
        topic=c.topic,
        topic_id=c.topic_id,
        partition=c.partition,
        base_offset=c.base_offset,
        end_offset=c.end_offset,
        **scan.manifest_fields(),
        leader_epochs=[
            EpochRange(epoch=e.epoch, start_offset=e.start_offset) for e in c.leader_epochs
        ],
        files=entries,
        overlaps=task.overlaps,
        supersedes=task.supersedes,
        source=SegmentSource(
            broker_id=c.broker_id,
            log_dir=c.log_dir,
            partition_dir=c.partition_dir,
            kafka_cluster_id=c.kafka_cluster_id,
            directory_id=c.directory_id,
            hostname=hostname,
            log_mtime_ms=c.mtime_ms,
        ),
        archived_at=utc_now(),
        archiver_version=archiver_version(),
        warnings=warnings,
    )
    total = sum(e.size for e in entries)
    try:
        store.put_if_absent(task.manifest_key, manifest.to_json_bytes())
    except IntegrityError:
        # Someone else wrote this manifest between our check and our write: it must describe
        # the same bytes, then the segment is archived (by them).
        try:
            existing = parse_manifest(store.get_bytes(task.manifest_key), key=task.manifest_key)
        except InvalidManifest:
            raise
        if existing.segment_sha256 != manifest.segment_sha256:
            raise
        return outcome(
            task,
            SegmentStatus.SKIPPED,
            reason=SkipReason.ALREADY_ARCHIVED.value,
            detail="manifest written concurrently",
            bytes_uploaded=uploaded,
            files_uploaded=sent,
            files_reused=reused,
            segment_bytes=total,
        )
    return outcome(
        task,
        SegmentStatus.ARCHIVED,
        segment_bytes=total,
        bytes_uploaded=uploaded,
        files_uploaded=sent,
        files_reused=reused,
        detail="; ".join(warnings),
    )
