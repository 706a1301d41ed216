"""KRaft metadata snapshots (``.checkpoint``) and ``quorum-state``, archived beside the log.

The metadata log's rolled segments are archived like any partition's (discovery, planner,
uploader; their committed bound is the newest snapshot, see
:func:`~kafka_archive.archive.discovery.side_files.metadata_committed_offset`). Its snapshots and
its ``quorum-state`` are not segments; :func:`archive_metadata_files` archives them for one log
dir holding ``__cluster_metadata-0``. Layout (relative to the partition prefix
``<cluster>/__cluster_metadata/0/``)::

    snapshots/<endOffset:020d>-<epoch:010d>-<sha16>.checkpoint           the snapshot's bytes
    snapshots/manifests/<endOffset:020d>-<epoch:010d>-<sha16>.json       its manifest (last)
    quorum-state/node-<id>.json                                          latest quorum-state

Contracts:

* **Snapshots are immutable once written** (Kafka writes ``<name>.checkpoint.part`` and renames
  it when complete): only complete names are taken, never ``.part`` nor ``.deleted``. Before
  upload a snapshot is verified: every batch's CRC and framing, no torn tail, a SnapshotHeader
  control record first and a SnapshotFooter last (``RecordsSnapshotReader``'s rules). A snapshot
  that fails is not archived and is reported (with file and byte position); it is retried next
  run.
* **Exactly once, content addressed**: data and manifest keys name the SHA-256 of the bytes and
  are written with ``put_if_absent`` (data first, manifest last), so a crash leaves no manifest
  and a re-run completes the snapshot without a duplicate; a snapshot of the same end offset
  taken by another node (different bytes) is kept beside it.
* **quorum-state** is context, not history: the node's latest (leader id, epoch, voters) is
  stored, overwriting the previous one, wrapped with the node id and the time it was read.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict

from kafka_archive.archive.digests import digest_buffer
from kafka_archive.archive.discovery import METADATA_TOPIC, ProblemInfo
from kafka_archive.archive.layout import partition_prefix, sha16
from kafka_archive.archive.manifest import utc_now
from kafka_archive.store import IntegrityError, ObjectStore
from segment_lib.cluster_metadata.codec import decode_control_value
from segment_lib.cluster_metadata.files import parse_snapshot_name
from segment_lib.control import ControlType, decode_control_record
from segment_lib.errors import SegmentError
from segment_lib.log_file import LogBuffer

__all__ = [
    "SNAPSHOT_MANIFEST_KIND",
    "MetadataFilesResult",
    "SnapshotManifest",
    "archive_metadata_files",
    "parse_snapshot_manifest",
    "quorum_state_key",
    "snapshot_manifest_prefix",
    "verify_snapshot",
]

SNAPSHOT_MANIFEST_KIND: Final = "kafka-archive/metadata-snapshot"
SNAPSHOT_MANIFEST_FORMAT_VERSION: Final = 1
QUORUM_STATE: Final = "quorum-state"
_PARTITION_DIR: Final = f"{METADATA_TOPIC}-0"


class SnapshotManifest(BaseModel):
    """What the archive knows of one archived snapshot (written after its data)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: str = SNAPSHOT_MANIFEST_KIND
    format_version: int = SNAPSHOT_MANIFEST_FORMAT_VERSION
    cluster: str
    #: exclusive: the snapshot holds the state of every offset below it
    end_offset: int
    epoch: int
    key: str
    size: int
    sha256: str
    crc32c: str
    batch_count: int
    record_count: int
    #: the SnapshotHeader's lastContainedLogTimestamp: the time of the state it holds
    last_contained_log_timestamp: int
    broker_id: int
    log_dir: str
    hostname: str
    archived_at: datetime

    def to_json_bytes(self) -> bytes:
        return (self.model_dump_json(indent=2) + "\n").encode("utf-8")


def parse_snapshot_manifest(data: bytes, *, key: str = "") -> SnapshotManifest:
    """Parse a snapshot manifest. Raises ``ValueError`` naming ``key`` when it is not one."""
    try:
        raw = json.loads(data)
        if raw.get("kind") != SNAPSHOT_MANIFEST_KIND:
            raise ValueError(f"kind is {raw.get('kind')!r}")
        if raw.get("format_version", 0) > SNAPSHOT_MANIFEST_FORMAT_VERSION:
            raise ValueError(
                f"format_version {raw.get('format_version')} is newer than this reader"
            )
        return SnapshotManifest.model_validate(raw)
    except (ValueError, AttributeError) as exc:
        raise ValueError(f"{key or 'snapshot manifest'}: not a snapshot manifest: {exc}") from None


def _prefix(cluster: str) -> str:
    return f"{partition_prefix(cluster, METADATA_TOPIC, 0)}snapshots/"


def snapshot_manifest_prefix(cluster: str) -> str:
    """``<cluster>/__cluster_metadata/0/snapshots/manifests/``: list it to find the snapshots."""
    return f"{_prefix(cluster)}manifests/"


def _stem(end_offset: int, epoch: int, sha256: str) -> str:
    return f"{end_offset:020d}-{epoch:010d}-{sha16(sha256)}"


def quorum_state_key(cluster: str, node_id: int) -> str:
    """Where the latest ``quorum-state`` of ``node_id`` is kept."""
    return f"{partition_prefix(cluster, METADATA_TOPIC, 0)}{QUORUM_STATE}/node-{node_id}.json"


class SnapshotFacts(BaseModel):
    """What :func:`verify_snapshot` found in a snapshot's bytes."""

    model_config = ConfigDict(frozen=True)

    batch_count: int
    record_count: int
    last_contained_log_timestamp: int


def verify_snapshot(data: bytes, path: str) -> SnapshotFacts:
    """Check a snapshot's bytes as Kafka's snapshot reader requires them.

    Raises:
        SegmentError: a CRC mismatch, corrupt framing or an incomplete last batch, or a
            snapshot not opened by a SnapshotHeader or not closed by a SnapshotFooter (file
            and byte position).
    """
    batches = records = 0
    first: ControlType | None = None
    last: ControlType | None = None
    header_ts = -1
    last_pos = 0
    with LogBuffer(data, path) as log:
        for batch in log.batches():
            batches += 1
            last_pos = batch.position
            for rec in log.records(batch):
                records += 1
                kind = None
                if batch.is_control:
                    kind = decode_control_record(rec.key, rec.value).type
                    if kind is ControlType.SNAPSHOT_HEADER and first is None:
                        header = decode_control_value(kind.name, rec.value, where=path)
                        header_ts = int((header or {}).get("lastContainedLogTimestamp", -1))
                if first is None:
                    first = kind or ControlType.UNKNOWN
                last = kind
    if first is not ControlType.SNAPSHOT_HEADER:
        raise SegmentError(
            "a KRaft snapshot must start with a SnapshotHeader control record",
            path=path,
            position=0,
            expected="a control batch with a SNAPSHOT_HEADER record first",
        )
    if last is not ControlType.SNAPSHOT_FOOTER:
        raise SegmentError(
            "a KRaft snapshot must end with a SnapshotFooter control record (incomplete?)",
            path=path,
            position=last_pos,
            expected="a control batch with a SNAPSHOT_FOOTER record last",
        )
    return SnapshotFacts(
        batch_count=batches, record_count=records, last_contained_log_timestamp=header_ts
    )


class MetadataFilesResult(BaseModel):
    """What :func:`archive_metadata_files` did in one log dir."""

    model_config = ConfigDict(frozen=True)

    snapshots_seen: int = 0
    snapshots_archived: int = 0
    snapshots_already: int = 0
    quorum_state_stored: bool = False
    problems: list[ProblemInfo] = []


def _archive_snapshot(
    store: ObjectStore, cluster: str, broker_id: int, log_dir: Path, path: Path
) -> bool:
    """Archive one snapshot; True if this run wrote its manifest, False if it already was."""
    parsed = parse_snapshot_name(path.name)
    assert parsed is not None
    end_offset, epoch = parsed
    data = path.read_bytes()
    digest = digest_buffer(data)
    stem = _stem(end_offset, epoch, digest.sha256)
    manifest_key = f"{snapshot_manifest_prefix(cluster)}{stem}.json"
    if store.exists(manifest_key):
        return False
    facts = verify_snapshot(data, str(path))
    key = f"{_prefix(cluster)}{stem}.checkpoint"
    obj, _created = store.put_if_absent(key, data, sha256=digest.sha256)
    if obj.size != digest.size or (obj.sha256 is not None and obj.sha256 != digest.sha256):
        raise IntegrityError(
            f"store reports size {obj.size} / sha256 {obj.sha256} for {key}, expected "
            f"{digest.size} / {digest.sha256}",
            uri=store.uri,
            key=key,
        )
    manifest = SnapshotManifest(
        cluster=cluster,
        end_offset=end_offset,
        epoch=epoch,
        key=key,
        size=digest.size,
        sha256=digest.sha256,
        crc32c=digest.crc32c,
        batch_count=facts.batch_count,
        record_count=facts.record_count,
        last_contained_log_timestamp=facts.last_contained_log_timestamp,
        broker_id=broker_id,
        log_dir=str(log_dir),
        hostname=socket.gethostname(),
        archived_at=utc_now(),
    )
    _obj, created = store.put_if_absent(manifest_key, manifest.to_json_bytes())
    return created


def _store_quorum_state(store: ObjectStore, cluster: str, broker_id: int, path: Path) -> bool:
    try:
        state: Any = json.loads(path.read_bytes())
    except FileNotFoundError:
        return False
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SegmentError(f"quorum-state is not JSON: {exc}", path=path) from None
    wrapped = {"node_id": broker_id, "read_at": utc_now().isoformat(), "quorum_state": state}
    store.put_bytes(quorum_state_key(cluster, broker_id), json.dumps(wrapped).encode())
    return True


def archive_metadata_files(
    store: ObjectStore,
    cluster: str,
    broker_id: int,
    log_dir: str | os.PathLike[str],
    *,
    dry_run: bool = False,
) -> MetadataFilesResult:
    """Archive the snapshots and the quorum-state of the metadata log in ``log_dir`` (nothing
    when it holds none). Problems with a file are returned, never raised; store errors
    propagate."""
    part = Path(log_dir) / _PARTITION_DIR
    if not part.is_dir():
        return MetadataFilesResult()
    seen = archived = already = 0
    problems: list[ProblemInfo] = []
    for entry in sorted(os.scandir(part), key=lambda e: e.name):
        if parse_snapshot_name(entry.name) is None:
            continue  # not a complete snapshot (.part, .deleted) or not a snapshot
        seen += 1
        if dry_run:
            continue
        try:
            if _archive_snapshot(store, cluster, broker_id, Path(log_dir), Path(entry.path)):
                archived += 1
            else:
                already += 1
        except FileNotFoundError:
            continue  # deleted by Kafka's snapshot cleaning meanwhile
        except (SegmentError, OSError) as exc:  # (store errors are not OSErrors: they propagate)
            problems.append(ProblemInfo.from_exception(exc, path=entry.path))
    stored = False
    if not dry_run:
        try:
            stored = _store_quorum_state(store, cluster, broker_id, part / QUORUM_STATE)
        except (SegmentError, OSError) as exc:
            problems.append(ProblemInfo.from_exception(exc))
    return MetadataFilesResult(
        snapshots_seen=seen,
        snapshots_archived=archived,
        snapshots_already=already,
        quorum_state_stored=stored,
        problems=problems,
    )
