"""The upload step: verify each planned segment, store its files, then (last) its manifest.

For every :class:`~kafka_archive.archive.planner.SegmentTask` of a log dir,
:func:`archive_segment`:

1. re-checks the source: the ``.log`` must still have the size and mtime discovery saw
   (``vanished`` / ``changed`` otherwise: skipped now, re-planned by the next run);
2. skips the segment if its manifest already exists (a run that was interrupted after writing
   it, or a concurrent run);
3. **verifies the bytes**: a full scan of the ``.log`` checking every batch's CRC (CRC-32C for
   magic 2, CRC-32 before) and structure, with no torn tail allowed (a rolled segment is
   complete) and every batch's offsets inside ``[base_offset, end_offset)``; the
   ``.index``/``.timeindex``/``.txnindex`` are parsed and checked with ``segment_lib``'s
   parsers. Any :class:`~segment_lib.errors.SegmentError` sends the segment to quarantine
   (:mod:`kafka_archive.archive.quarantine`) and the outcome is ``quarantined`` (a failure).
   The producer snapshot is checked too, but a bad one only drops the snapshot (with a warning
   in the manifest): it is broker state, not segment data;
4. uploads each file with ``put_if_absent`` under its content-addressed key: a file already in
   the store with the same SHA-256 (left by an interrupted run, or shared with another version)
   is not sent again. Every upload carries the SHA-256 planned at discovery: the store hashes
   the bytes it sends, refuses them if they differ (the file changed since discovery) and
   verifies the object end to end after the write; the size and SHA-256 it reports are compared
   with ours;
5. only then writes the manifest (``put_if_absent`` too). A crash at any point before leaves no
   manifest, so the next run redoes the segment, re-using whatever files already arrived.
   A manifest another run wrote first (same segment bytes) makes the outcome
   ``already_archived``; only the files this run created count as uploaded (see
   :mod:`kafka_archive.archive.report` on concurrent runs).

:func:`archive_log_dir` runs the tasks of one log dir on a small thread pool. A store that is
unreachable or refuses our credentials stops the run early (a :class:`StopSignal` shared by its
log dirs: the remaining segments are reported as failed without being attempted) instead of
timing out segment after segment.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import crc32c

from kafka_archive.archive.digests import FileDigest, digest_buffer
from kafka_archive.archive.discovery import LocalFile, ProblemInfo, SegmentCandidate, SkipReason
from kafka_archive.archive.layout import ObjectExtension, object_key, quarantine_prefix
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
from kafka_archive.archive.planner import LogDirPlan, SegmentTask
from kafka_archive.archive.quarantine import QuarantineFile, QuarantineRecord
from kafka_archive.archive.report import SegmentOutcome, SegmentStatus
from kafka_archive.store import (
    AccessDenied,
    IntegrityError,
    ObjectStore,
    StoreError,
    StoreUnavailable,
)
from segment_lib.errors import CorruptBatchError, SegmentError
from segment_lib.log_file import open_log
from segment_lib.offset_index import parse_offset_index
from segment_lib.producer_snapshot import parse_producer_snapshot
from segment_lib.time_index import parse_time_index
from segment_lib.txn_index import parse_txn_index

__all__ = [
    "LogScan",
    "StopSignal",
    "archive_log_dir",
    "archive_segment",
    "archiver_version",
    "scan_log",
]

log = logging.getLogger(__name__)

_HASH_BLOCK: Final = 1 << 20


def archiver_version() -> str:
    """The installed kafka-archive version (recorded in every manifest)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kafka-archive")
    except PackageNotFoundError:  # pragma: no cover - running from a bare checkout
        return "0+unknown"


@dataclass(slots=True)
class LogScan:
    """What the verifying scan of a ``.log`` found."""

    digest: FileDigest
    batch_count: int = 0
    record_count: int = 0
    first_offset: int = -1
    last_offset: int = -1
    first_timestamp: int = -1
    max_timestamp: int = -1
    offset_of_max_timestamp: int = -1
    magics: set[int] = field(default_factory=set)
    codecs: set[str] = field(default_factory=set)
    transactional_batches: int = 0
    control_batches: int = 0
    leader_epochs: set[int] = field(default_factory=set)


def scan_log(
    path: str | os.PathLike[str],
    base_offset: int,
    end_offset: int,
    *,
    expected_sha256: str | None = None,
) -> LogScan:
    """Verify every batch of a rolled ``.log`` and digest its bytes while they are mapped.

    With ``expected_sha256`` the SHA-256 is not computed here: the caller hands it to the store,
    which hashes the bytes it uploads anyway and refuses them if they differ, so a third SHA-256
    pass over the segment (after discovery's and the store's) would add nothing. The CRC-32C of
    the whole file is always computed (hardware CRC: far cheaper than SHA-256).

    Raises a :class:`~segment_lib.errors.SegmentError` naming the file and byte position for a
    CRC mismatch, a malformed or torn batch, or a batch outside ``[base_offset, end_offset)``.
    """
    with open_log(path) as logbuf:
        scan = LogScan(digest=FileDigest(0, "", ""))
        for b in logbuf.batches(allow_torn_tail=False):
            if b.last_offset < base_offset or b.last_offset >= end_offset:
                raise CorruptBatchError(
                    f"batch ending at offset {b.last_offset} lies outside the segment's range "
                    f"[{base_offset}, {end_offset})",
                    path=logbuf.path,
                    position=b.position,
                    expected=f"offsets in [{base_offset}, {end_offset})",
                )
            if scan.first_offset < 0:
                scan.first_offset, scan.first_timestamp = b.base_offset, b.first_timestamp
            scan.last_offset = b.last_offset
            scan.batch_count += 1
            scan.record_count += b.record_count
            scan.transactional_batches += b.is_transactional
            scan.control_batches += b.is_control
            scan.magics.add(b.magic)
            scan.codecs.add(b.codec.label)
            if b.magic >= 2 and b.partition_leader_epoch >= 0:
                scan.leader_epochs.add(b.partition_leader_epoch)
            if b.max_timestamp > scan.max_timestamp:
                scan.max_timestamp, scan.offset_of_max_timestamp = b.max_timestamp, b.last_offset
        # The mapped pages are hot from the scan: hashing them now costs no second disk read.
        if expected_sha256 is None:
            scan.digest = digest_buffer(logbuf.data)
        else:
            crc = 0
            data = logbuf.data
            for start in range(0, len(data), _HASH_BLOCK):
                crc = crc32c.crc32c(data[start : start + _HASH_BLOCK], crc)
            scan.digest = FileDigest(len(data), expected_sha256, f"{crc:08x}")
    return scan


def _check_companion(role: str, data: bytes, base_offset: int, path: Path) -> None:
    try:
        if role == "index":
            parse_offset_index(data, base_offset)
        elif role == "timeindex":
            parse_time_index(data, base_offset)
        elif role == "txnindex":
            parse_txn_index(data, base_offset)
    except SegmentError as exc:
        raise exc.with_location(path) from None


_EXT: Final[dict[FileRole, ObjectExtension]] = {
    "log": ".log",
    "index": ".index",
    "timeindex": ".timeindex",
    "txnindex": ".txnindex",
    "producer_snapshot": ".snapshot",
}


@dataclass(slots=True)
class _File:
    role: FileRole
    path: Path
    digest: FileDigest
    offset: int
    data: bytes | None  # small files are uploaded from the bytes that were verified


class _SourceChanged(Exception):
    def __init__(self, reason: SkipReason, detail: str) -> None:
        self.reason = reason
        self.detail = detail
        super().__init__(detail)


def _outcome(task: SegmentTask, status: SegmentStatus, **kw: Any) -> SegmentOutcome:
    c = task.candidate
    kw.setdefault("manifest_key", task.manifest_key)
    return SegmentOutcome(
        cluster=c.cluster,
        broker_id=c.broker_id,
        log_dir=c.log_dir,
        topic=c.topic,
        partition=c.partition,
        base_offset=c.base_offset,
        end_offset=c.end_offset,
        status=status,
        log_mtime_ms=c.mtime_ms,
        **kw,
    )


def _check_unchanged(c: SegmentCandidate) -> None:
    """Raise :class:`_SourceChanged` unless the segment is as discovery saw it: same size and
    mtime, and its successor (the segment at ``end_offset``, which defines its range) still
    there. The successor check catches the log cleaner merging this segment with the next one
    between discovery's listing and its ``stat``: the merged file keeps this segment's name and,
    as Kafka sets it, the newest mtime of the group, so size and mtime of the stat taken after
    the swap match it, while its batches run past ``end_offset`` (seen on a real 4.4 broker)."""
    try:
        st = c.log_path.stat()
    except FileNotFoundError:
        raise _SourceChanged(SkipReason.VANISHED, "deleted since discovery") from None
    if (st.st_size, st.st_mtime_ns) != (c.log.size, c.log.mtime_ns):
        raise _SourceChanged(
            SkipReason.CHANGED,
            f"size/mtime changed since discovery ({c.log.size} -> {st.st_size} bytes)",
        )
    if not (c.path / f"{c.end_offset:020d}.log").exists():
        raise _SourceChanged(
            SkipReason.CHANGED,
            f"the next segment ({c.end_offset}) is gone: merged by the log cleaner since discovery",
        )


def _read_companion(c: SegmentCandidate, role: FileRole, lf: LocalFile | None) -> _File | None:
    if lf is None:
        return None
    path = c.path / lf.name
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        _check_unchanged(c)  # the whole segment vanished? then say so
        return None  # only the companion is gone (Kafka may delete an empty .txnindex)
    _check_companion(role, data, c.base_offset, path)
    return _File(role, path, digest_buffer(data), c.base_offset, data)


def _quarantine(
    store: ObjectStore, task: SegmentTask, exc: SegmentError, log_sha256: str, hostname: str
) -> SegmentOutcome:
    c = task.candidate
    prefix = quarantine_prefix(c.cluster, c.topic, c.partition, c.base_offset, log_sha256)
    problem = ProblemInfo.from_exception(exc)
    where = (
        f"{problem.path} at byte {problem.position}"
        if problem.position is not None
        else (problem.path or "?")
    )
    detail = f"corrupt: {problem.error} in {where}: {problem.message}"
    files: list[QuarantineFile] = []
    uploaded = 0
    try:
        for lf in (c.log, c.index, c.timeindex, c.txnindex):
            if lf is None:
                continue
            path = c.path / lf.name
            if not path.exists():
                continue
            obj, created = store.put_if_absent(prefix + lf.name, path)
            uploaded += obj.size if created else 0
            files.append(
                QuarantineFile(name=lf.name, key=obj.key, size=obj.size, sha256=obj.sha256 or "")
            )
        record = QuarantineRecord(
            cluster=c.cluster,
            topic=c.topic,
            partition=c.partition,
            base_offset=c.base_offset,
            end_offset=c.end_offset,
            segment_sha256=log_sha256,
            broker_id=c.broker_id,
            log_dir=c.log_dir,
            hostname=hostname,
            detected_at=utc_now(),
            error=problem,
            files=files,
        )
        error_key = prefix + "error.json"
        if not store.exists(error_key):  # keep the first record of these bytes
            try:
                store.put_if_absent(error_key, record.to_json_bytes())
            except IntegrityError:
                pass  # a concurrent run recorded it first
    except StoreError as store_exc:
        return _outcome(
            task,
            SegmentStatus.FAILED,
            detail=detail + f"; quarantine upload failed: {store_exc}",
            error=problem,
            quarantine_prefix=prefix,
            bytes_uploaded=uploaded,
            manifest_key=None,
        )
    log.error(
        "kafka-archive: quarantined %s-%d segment %d: %s (%s)",
        c.topic,
        c.partition,
        c.base_offset,
        detail,
        prefix,
    )
    return _outcome(
        task,
        SegmentStatus.QUARANTINED,
        detail=detail,
        error=problem,
        quarantine_prefix=prefix,
        bytes_uploaded=uploaded,
        manifest_key=None,
        reason="quarantined",
    )


def archive_segment(
    store: ObjectStore,
    task: SegmentTask,
    *,
    dry_run: bool = False,
    hostname: str | None = None,
) -> SegmentOutcome:
    """Archive one planned segment (see the module docstring); never raises for segment-level
    problems, which are returned as the outcome. Store errors other than integrity problems
    are re-raised only as outcomes too; :func:`archive_log_dir` decides whether to go on."""
    c = task.candidate
    host = hostname or socket.gethostname()
    segment_bytes = sum(
        f.size for f in (c.log, c.index, c.timeindex, c.txnindex, c.snapshot) if f is not None
    )
    if dry_run:
        return _outcome(
            task,
            SegmentStatus.PLANNED,
            segment_bytes=segment_bytes,
            reason="dry_run",
            detail="would be archived",
        )
    try:
        _check_unchanged(c)
        if store.exists(task.manifest_key):
            return _outcome(
                task,
                SegmentStatus.SKIPPED,
                reason=SkipReason.ALREADY_ARCHIVED.value,
                detail="manifest written by an earlier or concurrent run",
            )
        try:
            # The SHA-256 of these bytes is checked by the store against the planned one.
            scan = scan_log(c.log_path, c.base_offset, c.end_offset, expected_sha256=c.log_sha256)
        except FileNotFoundError:
            raise _SourceChanged(SkipReason.VANISHED, "deleted since discovery") from None
        except SegmentError as exc:
            _check_unchanged(c)
            return _quarantine(store, task, exc, c.log_sha256, host)
        _check_unchanged(c)
        files = [_File("log", c.log_path, scan.digest, c.base_offset, None)]
        try:
            companions: tuple[tuple[FileRole, LocalFile | None], ...] = (
                ("index", c.index),
                ("timeindex", c.timeindex),
                ("txnindex", c.txnindex),
            )
            for role, lf in companions:
                f = _read_companion(c, role, lf)
                if f is not None:
                    files.append(f)
        except SegmentError as exc:
            return _quarantine(store, task, exc, c.log_sha256, host)
        warnings = list(c.warnings)
        if c.snapshot is not None:
            snap_path = c.path / c.snapshot.name
            try:
                data = snap_path.read_bytes()
                parse_producer_snapshot(data)
                files.append(
                    _File("producer_snapshot", snap_path, digest_buffer(data), c.end_offset, data)
                )
            except FileNotFoundError:
                pass  # removed by the broker's snapshot retention meanwhile
            except SegmentError as exc:
                warnings.append(
                    f"producer snapshot {c.snapshot.name} not archived: "
                    f"{exc.with_location(snap_path)}"
                )
        return _upload(store, task, scan, files, warnings, host)
    except _SourceChanged as changed:
        return _outcome(
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
    files: list[_File],
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
            raise _SourceChanged(
                SkipReason.VANISHED, f"{f.path.name} deleted during upload"
            ) from None
        except IntegrityError:
            _check_unchanged(c)  # a source that changed under us is not a store failure
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
        first_offset=scan.first_offset,
        last_offset=scan.last_offset,
        batch_count=scan.batch_count,
        record_count=scan.record_count,
        first_timestamp=scan.first_timestamp,
        max_timestamp=scan.max_timestamp,
        offset_of_max_timestamp=scan.offset_of_max_timestamp,
        magics=sorted(scan.magics),
        codecs=sorted(scan.codecs),
        transactional_batches=scan.transactional_batches,
        control_batches=scan.control_batches,
        batch_leader_epochs=sorted(scan.leader_epochs),
        leader_epochs=[
            EpochRange(epoch=e.epoch, start_offset=e.start_offset) for e in c.leader_epochs
        ],
        segment_sha256=scan.digest.sha256,
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
        return _outcome(
            task,
            SegmentStatus.SKIPPED,
            reason=SkipReason.ALREADY_ARCHIVED.value,
            detail="manifest written concurrently",
            bytes_uploaded=uploaded,
            files_uploaded=sent,
            files_reused=reused,
            segment_bytes=total,
        )
    return _outcome(
        task,
        SegmentStatus.ARCHIVED,
        segment_bytes=total,
        bytes_uploaded=uploaded,
        files_uploaded=sent,
        files_reused=reused,
        detail="; ".join(warnings),
    )


def _failed(task: SegmentTask, exc: BaseException, detail: str | None = None) -> SegmentOutcome:
    problem = ProblemInfo.from_exception(exc)
    return _outcome(
        task,
        SegmentStatus.FAILED,
        manifest_key=None,
        detail=detail or f"{problem.error}: {exc}",
        error=problem,
        reason="store_error" if isinstance(exc, StoreError) else "error",
    )


class StopSignal:
    """Shared by the log dirs of one run: set by the first fatal store error (unreachable
    store, refused credentials), after which no further segment is attempted."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.reason: BaseException | None = None

    def set(self, reason: BaseException) -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
                self._event.set()

    def is_set(self) -> bool:
        return self._event.is_set()


def archive_log_dir(
    store: ObjectStore,
    plan: LogDirPlan,
    *,
    dry_run: bool = False,
    concurrency: int = 4,
    on_outcome: Callable[[SegmentOutcome], None] | None = None,
    stop: StopSignal | None = None,
) -> list[SegmentOutcome]:
    """Run every task of one log dir's plan; outcomes in plan order."""
    tasks: Sequence[SegmentTask] = plan.tasks
    host = socket.gethostname()
    signal = stop or StopSignal()

    def run(task: SegmentTask) -> SegmentOutcome:
        if signal.is_set() and signal.reason is not None:
            return _failed(
                task,
                signal.reason,
                f"not attempted: the store failed earlier in this run ({signal.reason})",
            )
        try:
            return archive_segment(store, task, dry_run=dry_run, hostname=host)
        except (StoreUnavailable, AccessDenied) as exc:
            signal.set(exc)
            return _failed(task, exc)
        except (StoreError, OSError, InvalidManifest) as exc:
            return _failed(task, exc)

    results: dict[int, SegmentOutcome] = {}
    with ThreadPoolExecutor(
        max_workers=max(1, concurrency), thread_name_prefix="kafka-archive-upload"
    ) as pool:
        futures = {pool.submit(run, t): i for i, t in enumerate(tasks)}
        for fut in as_completed(futures):
            outcome = fut.result()
            results[futures[fut]] = outcome
            if on_outcome is not None:
                on_outcome(outcome)
    return [results[i] for i in range(len(tasks))]
