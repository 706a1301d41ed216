"""Quarantining a corrupt segment: its files and an ``error.json`` under the quarantine prefix.

Contract: :func:`quarantine_segment` uploads the segment's ``.log`` and companions (what is
still there, ``put_if_absent``) under the quarantine prefix of these bytes, then the first
:class:`~kafka_archive.archive.quarantine.QuarantineRecord` for them, and returns the
``quarantined`` outcome (a failure of the run); if the store fails meanwhile, the outcome is
``failed`` and says so. Never raises for store errors.
"""

from __future__ import annotations

import logging

from kafka_archive.archive.discovery import ProblemInfo
from kafka_archive.archive.layout import quarantine_prefix
from kafka_archive.archive.manifest import utc_now
from kafka_archive.archive.planner import SegmentTask
from kafka_archive.archive.quarantine import QuarantineFile, QuarantineRecord
from kafka_archive.archive.report import SegmentOutcome, SegmentStatus
from kafka_archive.archive.uploader.outcomes import outcome
from kafka_archive.store import IntegrityError, ObjectStore, StoreError
from segment_lib.errors import SegmentError

__all__ = ["quarantine_segment"]

log = logging.getLogger(__name__)


def quarantine_segment(
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
        return outcome(
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
    return outcome(
        task,
        SegmentStatus.QUARANTINED,
        detail=detail,
        error=problem,
        quarantine_prefix=prefix,
        bytes_uploaded=uploaded,
        manifest_key=None,
        reason="quarantined",
    )
