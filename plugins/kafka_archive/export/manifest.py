"""The export id, the manifest of an export's files, and the commit.

An export writes to an **output store** (a directory or an ``s3://bucket/prefix``, opened
through :mod:`kafka_archive.store`) that holds **only its data files**
(``date=YYYY-MM-DD/hour=HH/part-<export id>-p<partition>-<seq>.parquet``), so that a reader
globbing it (DuckDB's ``read_parquet('<output>/**')``, ``spark.read.parquet``, pyarrow) finds
nothing else: the export's own bookkeeping - the manifest and the staged files - lives in the
**bookkeeping store** beside it, ``<output>.kafka-archive/`` (:func:`bookkeeping_uri`), and a
local output keeps no ``.ka-meta-*`` sidecar files (their SHA-256 is the manifest's). Its life:

1. Each Spark task writes its partition's Parquet files to the bookkeeping store under
   ``_staging/<export id>/<final key>`` (file names are a function of the export id, the
   partition and a sequence number, so a retried or re-run task *replaces* the staged files
   of a failed attempt: nothing is duplicated).
2. :func:`commit` publishes every staged file to its final key in the output, checking each
   copy's SHA-256, then writes the manifest :data:`MANIFEST_KEY` into the bookkeeping store
   **last**: an export exists once its manifest does, and the manifest is the only truth
   about which files it is made of.
3. It then removes the staging prefix and every data file of an earlier export (or of a
   failed publication) that the manifest does not list, so after a commit the output holds
   exactly the manifest's files, and directory readers read the same rows as a manifest
   reader.

A crash anywhere leaves a state the next run of the same request completes: before the manifest
is written, the previous manifest (if any) still describes the output; after it, a re-run finds
the manifest with its own export id, only finishes step 3 and reports the export committed.

An output written by an earlier version (manifest ``_kafka_archive_export.json`` and
``_staging/`` inside the output) is read as such, and its manifest and staging are moved out
(deleted from the output) by the next commit into it.

A manifest with ``complete: false`` (an export that stopped at the archive's last stable
offset: a transaction was open where the archive ends) is not served as done: the next run of
the same request exports the ranges again and commits a manifest that replaces it, with the
same file names (each record once).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pydantic import Field

from kafka_archive.export.schema import FILE_SCHEMA, SCHEMA_VERSION
from kafka_archive.frozen import FrozenModel
from kafka_archive.store.base import ObjectStore
from kafka_archive.store.errors import (
    AccessDenied,
    IntegrityError,
    ObjectNotFound,
    StoreConfigError,
    StoreError,
)
from kafka_archive.timeparse import now_ms

__all__ = [
    "BOOKKEEPING_SUFFIX",
    "MANIFEST_KEY",
    "STAGING_PREFIX",
    "ExportFile",
    "ExportManifest",
    "PartitionRange",
    "bookkeeping_uri",
    "check_output",
    "clean_output",
    "commit",
    "export_id_for",
    "manifest_for",
    "open_export_stores",
    "read_manifest",
    "staged_key",
]

MANIFEST_KEY = "_kafka_archive_export.json"
STAGING_PREFIX = "_staging/"
#: the bookkeeping store of output ``X`` is ``X`` + this suffix (a sibling folder or prefix)
BOOKKEEPING_SUFFIX = ".kafka-archive"
MANIFEST_FORMAT = 1
#: data files an export writes (anything else in the output is never deleted)
_DATA_FILE = re.compile(r"(^|/)part-e-[0-9a-f]{16}-p\d{5}-\d{5}\.parquet$")
_PUBLISH_THREADS = 4


class PartitionRange(FrozenModel):
    """One source partition's exported offsets ``[start_offset, end_offset)``."""

    partition: int
    start_offset: int
    end_offset: int


class ExportFile(FrozenModel):
    """One Parquet file of an export (``key`` relative to the output store)."""

    key: str
    partition: int
    #: the ``date``/``hour`` partition values (``None``: records without a timestamp)
    date: str | None
    hour: int | None
    rows: int
    bytes: int
    sha256: str
    first_offset: int
    last_offset: int


class ExportManifest(FrozenModel):
    """What :data:`MANIFEST_KEY` holds: the request, every file, and the counts."""

    format: int = MANIFEST_FORMAT
    export_id: str
    cluster: str
    topic: str
    topic_id: str | None = None
    schema_version: int = SCHEMA_VERSION
    #: ``name: type`` of every column stored in the files (partition columns excluded)
    columns: dict[str, str] = Field(default_factory=dict)
    partition_columns: list[str] = Field(default_factory=lambda: ["date", "hour"])
    ranges: list[PartitionRange]
    files: list[ExportFile]
    rows: int
    aborted_records: int = 0
    control_batches: int = 0
    open_txn_records: int = 0
    #: ``False``: records of the ranges above the archive's last stable offset are not in the
    #: files (a transaction was open where the archive ends); running the same export again
    #: once the archive holds its outcome re-exports the ranges whole (:attr:`incomplete`)
    complete: bool = True
    #: per partition not exported to its end: ``partition``, ``stable_offset`` (where it
    #: stopped), ``end_offset``, ``open_txns``, ``message``
    incomplete: list[dict[str, Any]] = Field(default_factory=list)
    committed_at_ms: int

    def to_json(self) -> bytes:
        return self.model_dump_json(indent=1).encode()


def export_id_for(
    cluster: str, topic: str, ranges: Sequence[PartitionRange], *, fmt: str = "parquet"
) -> str:
    """The export id: a digest of what is exported (cluster, topic, resolved offset ranges),
    where to (``fmt``: ``parquet``, or ``iceberg:<table>``) and the schema version. The same
    request resolved to the same offsets is the same export."""
    ident = {
        "cluster": cluster,
        "topic": topic,
        "ranges": [[r.partition, r.start_offset, r.end_offset] for r in ranges],
        "format": fmt,
        "schema": SCHEMA_VERSION,
    }
    digest = hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()
    return f"e-{digest[:16]}"


def staged_key(export_id: str, final_key: str) -> str:
    """Where a task stages the file that will be published as ``final_key``."""
    return f"{STAGING_PREFIX}{export_id}/{final_key}"


def bookkeeping_uri(output_uri: str) -> str:
    """Where an export to ``output_uri`` keeps its manifest and staged files: the sibling
    folder or prefix ``<output>.kafka-archive`` (outside the output, so readers globbing the
    output never meet them).

    Raises:
        StoreConfigError: an S3 output without a prefix (its sibling would be inside it).
    """
    uri = output_uri.rstrip("/")
    if uri.startswith("s3://") and "/" not in uri[len("s3://") :]:
        raise StoreConfigError(
            "an S3 export output needs a prefix (the export keeps its manifest beside it)",
            uri=output_uri,
            hint="give --output s3://bucket/some/prefix",
        )
    return uri + BOOKKEEPING_SUFFIX


def open_export_stores(uri: str, **options: Any) -> tuple[ObjectStore, ObjectStore]:
    """``(output, bookkeeping)`` stores of an export to ``uri`` (see the module docstring); a
    local output is opened without sidecar files."""
    from kafka_archive.store import open_store
    from kafka_archive.store.local import LocalStore

    output = open_store(uri, **options)
    if isinstance(output, LocalStore):
        output = LocalStore(output.root, sidecars=False, **options)
    return output, open_store(bookkeeping_uri(output.uri), **options)


def read_manifest(meta: ObjectStore, output: ObjectStore | None = None) -> ExportManifest | None:
    """The committed manifest in the bookkeeping store ``meta`` (else, given ``output``, in
    an output written by an earlier version), or ``None`` when nothing was committed there.

    Raises:
        StoreError: :data:`MANIFEST_KEY` is there but is not an export manifest this version
            reads (not JSON, fields missing, a newer format): named, with a hint. The output
            is left as it is (it may be someone else's folder).
    """
    from pydantic import ValidationError

    try:
        data = meta.get_bytes(MANIFEST_KEY)
    except ObjectNotFound:
        if output is None:
            return None
        try:
            data = output.get_bytes(MANIFEST_KEY)
        except ObjectNotFound:
            return None
        meta = output  # a legacy manifest: named where it is in errors
    hint = (
        "this folder holds something other than a kafka-archive export: give --output another "
        f"folder, or remove {MANIFEST_KEY} if it is yours to remove (the export then rewrites "
        "the folder's export files)"
    )
    try:
        raw = json.loads(data)
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError alike
        raise StoreError(
            f"the export manifest is not JSON ({type(exc).__name__} at byte "
            f"{getattr(exc, 'pos', getattr(exc, 'start', '?'))})",
            uri=meta.uri,
            key=MANIFEST_KEY,
            hint=hint,
        ) from None
    found = raw.get("format") if isinstance(raw, dict) else None
    if isinstance(found, int) and not isinstance(found, bool) and found > MANIFEST_FORMAT:
        raise StoreError(
            f"the export manifest has format {found}; this version reads format "
            f"{MANIFEST_FORMAT} and older",
            uri=meta.uri,
            key=MANIFEST_KEY,
            hint="upgrade kafka-archive, or give --output another folder",
        )
    try:
        return ExportManifest.model_validate(raw)
    except ValidationError as exc:
        fields = sorted({".".join(str(x) for x in e["loc"]) or "(top)" for e in exc.errors()})
        raise StoreError(
            "the export manifest is not one kafka-archive wrote: "
            f"{exc.error_count()} bad or missing field(s): {', '.join(fields[:8])}",
            uri=meta.uri,
            key=MANIFEST_KEY,
            hint=hint,
        ) from None


def check_output(output: ObjectStore) -> None:
    """Before any Spark job: a local output is a directory, or can be made one, that this
    process can write (an existing file, a parent that is a file, a read-only place are refused
    here, in one line, rather than as a failed Spark job's stack traces). Nothing is left
    behind: a probe file is created in the output (or its nearest existing parent) and
    removed, and a missing directory is not created here. Object-store outputs are not probed
    (their first write answers with a typed error).

    Raises:
        StoreConfigError: the output is a file, or a parent is.
        AccessDenied: the directory cannot be written.
        StoreError: any other filesystem failure.
    """
    import os
    import tempfile

    from kafka_archive.store.local import LocalStore

    if not isinstance(output, LocalStore):
        return
    root = output.root
    if root.exists() and not root.is_dir():
        raise StoreConfigError(
            f"the export output {root} is an existing file, not a directory",
            uri=output.uri,
            hint="give --output a directory (a new one, or an earlier export's)",
        )
    nearest = root
    while not nearest.exists() and nearest != nearest.parent:
        nearest = nearest.parent
    if not nearest.is_dir():
        raise StoreConfigError(
            f"the export output {root} cannot be a directory: {nearest} is a file",
            uri=output.uri,
            hint="give --output a directory path whose parents are directories",
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".kafka-archive-probe-", dir=nearest)
        os.close(fd)
        os.unlink(probe)
    except PermissionError as exc:
        raise AccessDenied(
            f"the export output {root} cannot be written: {exc.strerror or exc} ({nearest})",
            uri=output.uri,
            hint="give --output a directory this user (and the Spark executors) can write, "
            "or fix its permissions",
        ) from None
    except OSError as exc:
        raise StoreError(
            f"the export output {root} cannot be written: {exc.strerror or exc} ({nearest})",
            uri=output.uri,
            hint="give --output a directory on a writable filesystem",
        ) from None


def _publish(output: ObjectStore, meta: ObjectStore, export_id: str, file: ExportFile) -> None:
    """Copy one staged file (in ``meta``) to its final key in ``output``, verified against the
    task's SHA-256 (a file already published by an interrupted commit is checked and left)."""
    head = output.head(file.key)
    if (
        head is not None
        and head.size == file.bytes
        and hashlib.sha256(output.get_bytes(file.key)).hexdigest() == file.sha256
    ):
        return
    data = meta.get_bytes(staged_key(export_id, file.key))
    if hashlib.sha256(data).hexdigest() != file.sha256:
        raise IntegrityError(
            f"staged export file {file.key} does not match the checksum its task reported",
            key=staged_key(export_id, file.key),
        )
    output.put_bytes(file.key, data, sha256=file.sha256)


def commit(output: ObjectStore, meta: ObjectStore, manifest: ExportManifest) -> None:
    """Publish the manifest's staged files, write the manifest last, then clean up (see the
    module docstring). Idempotent: an interrupted commit is completed by calling it again."""
    with ThreadPoolExecutor(_PUBLISH_THREADS, thread_name_prefix="export-publish") as pool:
        for _ in pool.map(lambda f: _publish(output, meta, manifest.export_id, f), manifest.files):
            pass
    meta.put_bytes(MANIFEST_KEY, manifest.to_json())
    clean_output(output, meta, manifest)


def clean_output(output: ObjectStore, meta: ObjectStore, manifest: ExportManifest) -> list[str]:
    """Delete the staging prefix, every export data file ``manifest`` does not list, and the
    manifest and staging an earlier version kept inside the output; returns the deleted keys
    (of ``meta``, then of ``output``). Only names an export writes are touched."""
    listed = {f.key for f in manifest.files}
    staged = [o.key for o in meta.list(STAGING_PREFIX)]
    for key in staged:
        meta.delete(key)
    doomed = [o.key for o in output.list(STAGING_PREFIX)]  # an earlier version's
    doomed += [
        o.key
        for o in output.list("")
        if not o.key.startswith(STAGING_PREFIX) and _DATA_FILE.search(o.key) and o.key not in listed
    ]
    if output.head(MANIFEST_KEY) is not None:
        doomed.append(MANIFEST_KEY)
    for key in doomed:
        output.delete(key)
    return staged + doomed


def manifest_for(
    *,
    export_id: str,
    cluster: str,
    topic: str,
    ranges: Iterable[PartitionRange],
    files: Iterable[ExportFile],
    topic_id: str | None = None,
    aborted_records: int = 0,
    control_batches: int = 0,
    open_txn_records: int = 0,
    incomplete: Sequence[dict[str, Any]] = (),
) -> ExportManifest:
    """The manifest of a finished set of tasks (files in partition, then key order)."""
    ordered = sorted(files, key=lambda f: (f.partition, f.key))
    return ExportManifest(
        export_id=export_id,
        cluster=cluster,
        topic=topic,
        topic_id=topic_id,
        columns={f.name: str(f.type) for f in FILE_SCHEMA},
        ranges=list(ranges),
        files=ordered,
        rows=sum(f.rows for f in ordered),
        aborted_records=aborted_records,
        control_batches=control_batches,
        open_txn_records=open_txn_records,
        complete=not incomplete,
        incomplete=list(incomplete),
        committed_at_ms=now_ms(),
    )
