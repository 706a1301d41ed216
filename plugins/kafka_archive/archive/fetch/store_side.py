"""The fetch archiver's side of the store: where a partition resumes, and one segment's upload.

Progress is what the store holds (no local state): :func:`resume_point` reads the partition's
newest manifest of ``origin`` ``fetch`` of the topic's current incarnation (manifests are
listed in base offset order; only the newest are read, down to one of that topic id: a topic
deleted and re-created starts again at offset 0, its manifests among the old incarnation's)
and returns its ``end_offset``, the transactions open there and the leader
epochs known, which is all a :class:`~segment_lib.segment_builder.SegmentBuilder` needs to go
on as if it had never stopped.

:func:`upload_segment` stores one closed segment as the disk archiver does
(:mod:`kafka_archive.archive.uploader`): the ``.log`` is scanned batch by batch (CRC, offsets
inside ``[base_offset, end_offset)``), every file goes under its content-addressed key with
``put_if_absent`` (the store verifies the SHA-256 it was given), and the manifest is written
last, after its claim (:mod:`~kafka_archive.archive.fetch.claims`: the fence against a second
writer of the partition; :func:`resume_point` completes a claim whose manifest a crash left
unwritten). A crash anywhere before the claim leaves a segment the next run fetches and builds
again (its files, byte-identical, are found in the store and not sent twice); a manifest
written concurrently for the same bytes counts as archived.

Two fetch archivers of one partition at once (a group hand-over, a member cut off from its
coordinator, two archivers started by mistake): the claims make it harmless, atomically. Of two
segments at one base offset only the first claimed is stored; the other writer gets
:class:`~kafka_archive.archive.fetch.claims.Fenced`, stores nothing and goes on from the
store's end. :func:`fetched_from`, asked before an upload, only spares the work of building and
sending a segment the store already holds past its base (it decides nothing: a writer that
passes it can still lose the claim).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from kafka_archive.archive.digests import digest_buffer
from kafka_archive.archive.fetch.claims import claim_segment, follow_claims
from kafka_archive.archive.layout import (
    ObjectExtension,
    manifest_key,
    object_key,
    parse_manifest_key,
)
from kafka_archive.archive.manifest import (
    EpochRange,
    FetchedSegment,
    FileRole,
    ManifestFile,
    SegmentManifest,
    SegmentSource,
    iter_manifest_keys,
    parse_manifest,
    read_manifest,
    utc_now,
)
from kafka_archive.archive.uploader import archiver_version, scan_log
from kafka_archive.store import IntegrityError, ObjectNotFound, ObjectStore
from segment_lib.checkpoints import EpochEntry
from segment_lib.names import LOG_SUFFIX
from segment_lib.segment_builder import BuiltSegment

__all__ = [
    "Resume",
    "UploadResult",
    "fetched_from",
    "resume_point",
    "upload_segment",
]

_EXT: Final[dict[FileRole, ObjectExtension]] = {
    "log": ".log",
    "index": ".index",
    "timeindex": ".timeindex",
    "txnindex": ".txnindex",
}


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a partition's fetch archive goes on (``offset`` None: nothing fetched yet)."""

    offset: int | None
    open_transactions: dict[int, int] = field(default_factory=dict)
    leader_epochs: tuple[tuple[int, int], ...] = ()
    manifest_key: str | None = None


def resume_point(
    store: ObjectStore, cluster: str, topic: str, partition: int, topic_id: str | None = None
) -> Resume:
    """The end of the partition's fetched chain of ``topic_id``: its newest fetched manifest,
    or the claims going on from it (module docstring; ``None``, or a manifest without one:
    any topic id; the claims are those of ``topic_id``, else of the manifest's)."""
    found: SegmentManifest | None = None
    key = ""
    for k in reversed(list(iter_manifest_keys(store, cluster, topic, partition))):
        m = _read(store, k)  # newest base offsets first: the first fetched one ends last
        if m is not None and _ours(m, topic_id):
            found, key = m, k
            break
    claimed = follow_claims(
        store, cluster, topic, partition,
        topic_id if topic_id is not None else (found.topic_id if found is not None else None),
        found.end_offset if found is not None else None,
    )  # fmt: skip
    if claimed is not None:
        found = claimed
        key = manifest_key(cluster, topic, partition, claimed.base_offset, claimed.segment_sha256)
    if found is None:
        return Resume(None)
    m = found
    fetch = m.fetch
    return Resume(
        m.end_offset,
        {t.producer_id: t.first_offset for t in fetch.open_transactions} if fetch else {},
        tuple((e.epoch, e.start_offset) for e in m.leader_epochs),
        key,
    )


def _base_of(key: str) -> int:
    parsed = parse_manifest_key(key)
    return -1 if parsed is None else parsed.base_offset


def _ours(m: SegmentManifest | None, topic_id: str | None) -> bool:
    """A fetched manifest of the incarnation ``topic_id`` (``None``: any)."""
    return (
        m is not None
        and m.origin == "fetch"
        and (topic_id is None or m.topic_id in (None, topic_id))
    )


def _read(store: ObjectStore, key: str) -> SegmentManifest | None:
    """The manifest, or ``None`` if it was deleted meanwhile (a prune)."""
    try:
        return read_manifest(store, key)
    except ObjectNotFound:
        return None


def fetched_from(
    store: ObjectStore,
    cluster: str,
    topic: str,
    partition: int,
    topic_id: str | None,
    base: int,
    foreign: set[str] | None = None,
) -> int | None:
    """The largest end offset of the fetched manifests of ``topic_id`` whose base offset is at
    least ``base`` (another archiver's progress; ``None``: there are none). Lists the
    partition's manifest keys and reads only those at or past ``base``; ``foreign`` collects
    the keys found not to be such manifests (disk-archived, another incarnation's: a manifest
    never changes under its key), which are not read again."""
    ends = []
    for key in iter_manifest_keys(store, cluster, topic, partition):
        if _base_of(key) >= base and (foreign is None or key not in foreign):
            m = _read(store, key)
            if m is not None and _ours(m, topic_id):
                ends.append(m.end_offset)
            elif m is not None and foreign is not None:
                foreign.add(key)
    return max(ends, default=None)


@dataclass(frozen=True, slots=True)
class UploadResult:
    manifest_key: str
    created: bool
    bytes_uploaded: int
    manifest: SegmentManifest


def _epochs_within(epochs: list[EpochEntry], base: int, end: int) -> list[EpochRange]:
    """The entries whose range (up to the next entry's start) meets ``[base, end)``."""
    out = []
    for i, e in enumerate(epochs):
        until = epochs[i + 1].start_offset if i + 1 < len(epochs) else None
        if e.start_offset < end and (until is None or until > base):
            out.append(EpochRange(epoch=e.epoch, start_offset=e.start_offset))
    return out


def upload_segment(
    store: ObjectStore,
    *,
    cluster: str,
    topic: str,
    topic_id: str | None,
    partition: int,
    built: BuiltSegment,
    directory: Path,
    end_offset: int,
    leader_epochs: list[EpochEntry],
    source: SegmentSource,
    fetch: FetchedSegment,
) -> UploadResult:
    """Store one closed segment of ``directory`` and then its manifest (module docstring).

    Raises:
        SegmentError: the built ``.log`` does not verify (never expected: the builder checked
            every batch's CRC as it arrived).
        StoreError: the store failed; nothing of the segment counts as archived.
    """
    log_path = directory / built.file_name(LOG_SUFFIX)
    scan = scan_log(log_path, built.base_offset, end_offset)
    parts: list[tuple[FileRole, str, bytes | Path, str, int, str]] = [
        ("log", log_path.name, log_path, scan.digest.sha256, scan.digest.size, scan.digest.crc32c)
    ]
    companions: list[tuple[FileRole, str, bytes]] = [
        ("index", ".index", built.index_bytes()),
        ("timeindex", ".timeindex", built.time_index_bytes()),
    ]
    if built.aborted:
        companions.append(("txnindex", ".txnindex", built.txn_index_bytes()))
    for role, suffix, data in companions:
        d = digest_buffer(data)
        name = f"{built.base_offset:020d}{suffix}"
        parts.append((role, name, data, d.sha256, d.size, d.crc32c))
    entries: list[ManifestFile] = []
    uploaded = 0
    for role, name, src, sha, size, crc in parts:
        key = object_key(cluster, topic, partition, built.base_offset, sha, _EXT[role])
        obj, created = store.put_if_absent(key, src, sha256=sha)
        if obj.size != size or (obj.sha256 is not None and obj.sha256 != sha):
            raise IntegrityError(
                f"store reports size {obj.size} / sha256 {obj.sha256} for {key}, expected "
                f"{size} / {sha}",
                uri=store.uri,
                key=key,
            )
        uploaded += size if created else 0
        entries.append(
            ManifestFile(role=role, name=name, key=key, size=size, sha256=sha, crc32c=crc)
        )
    manifest = SegmentManifest(
        cluster=cluster,
        topic=topic,
        topic_id=topic_id,
        partition=partition,
        base_offset=built.base_offset,
        end_offset=end_offset,
        **scan.manifest_fields(),
        leader_epochs=_epochs_within(leader_epochs, built.base_offset, end_offset),
        files=entries,
        source=source,
        archived_at=utc_now(),
        archiver_version=archiver_version(),
        origin="fetch",
        fetch=fetch,
    )
    data = manifest.to_json_bytes()
    claim_segment(store, manifest, data)  # Fenced: another archiver's segment starts here
    key = manifest_key(cluster, topic, partition, built.base_offset, scan.digest.sha256)
    try:
        _obj, created = store.put_if_absent(key, data)
    except IntegrityError:
        # another archiver wrote this segment's manifest first: archived, if the same bytes
        existing = parse_manifest(store.get_bytes(key), key=key)
        if existing.segment_sha256 != manifest.segment_sha256:
            raise
        return UploadResult(key, False, uploaded, existing)
    return UploadResult(key, created, uploaded, manifest)
