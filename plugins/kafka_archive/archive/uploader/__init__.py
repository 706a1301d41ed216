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

Modules: :mod:`~kafka_archive.archive.uploader.scan` (the verifying scan),
:mod:`~kafka_archive.archive.uploader.source` (is the source still as discovered),
:mod:`~kafka_archive.archive.uploader.segment` (one segment, steps 1-5),
:mod:`~kafka_archive.archive.uploader.quarantine_upload` (a corrupt segment's quarantine),
:mod:`~kafka_archive.archive.uploader.outcomes` (outcome records),
:mod:`~kafka_archive.archive.uploader.log_dir` (a log dir's tasks, :class:`StopSignal`).
This package re-exports their public names.
"""

from __future__ import annotations

from kafka_archive.archive.uploader.log_dir import StopSignal, archive_log_dir
from kafka_archive.archive.uploader.scan import LogScan, scan_log
from kafka_archive.archive.uploader.segment import archive_segment, archiver_version

__all__ = [
    "LogScan",
    "StopSignal",
    "archive_log_dir",
    "archive_segment",
    "archiver_version",
    "scan_log",
]
