"""The catalog build driver: which archived segments are new, what to extract, idempotent writes.

Independent of Spark: the extraction of segment objects is handed to a :class:`TaskRunner`
(in-process here; :mod:`kafka_archive.spark.session` runs the same :func:`run_extract_task` on
Spark executors). The driver does the rest:

1. list the archived segments (one :class:`SegmentRef` per manifest) and drop the ones the
   catalog already holds (``segments`` has a unique ``(partition, manifest_key)``);
2. in waves of segments (sorted by partition and offset), run **pass 1**: every executor reads
   its object from the store with ranged reads, verifies every batch CRC and the whole object
   against the manifest's CRC-32C (or SHA-256, ``verify``), and extracts stats, time-index
   intervals, histogram and consumer-offset commits;
3. per touched partition, recompute the canonical chain (:mod:`kafka_archive.catalog.chain`)
   over old and new versions. A new version whose chain share is its whole range uses its pass-1
   rows as they are; a version that serves only part of its range (an overlap with a version
   that takes precedence), new or already cataloged, is extracted again restricted to its
   pieces (**pass 2**, also on executors; rare: replicas rolled differently, compaction);
4. per partition, **one transaction** writes the new segment rows, the chain pieces, the
   intervals with their running maximum timestamps (recomputed from the first changed offset
   on, so segments may arrive in any order), histogram, commits and markers, and resolves
   transactional offset commits against their markers.

Idempotence and crash safety: nothing of a partition is visible until its transaction commits,
and a committed segment is never extracted again (unless the chain takes part of it away). A
build killed at any point leaves whole partitions done or untouched, and the next run finishes
the rest; a run with nothing new adds nothing. If another build changed a partition between
the read and the write phase, the partition is left for the next run (``deferred``).

Failures: a segment whose bytes match its manifest but are corrupt
(:class:`~segment_lib.errors.SegmentError`) is recorded with status ``corrupt`` and the error
(so ``gaps`` shows it) and is not retried; a store failure (unreachable, missing object, bytes
that differ from the manifest's checksum:
:class:`~kafka_archive.catalog.integrity.ObjectIntegrityError`, naming the key and, when it can
be located, the byte position) is reported, nothing of the segment is written, and the segment
is left for the next run.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from sqlalchemy import Table, delete, insert, select, update
from sqlalchemy.exc import IntegrityError as SqlIntegrityError
from sqlalchemy.orm import Session

from kafka_archive.catalog import problems
from kafka_archive.catalog.chain import Version, compute_pieces
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.extract import (
    CONSUMER_OFFSETS_TOPIC,
    DEFAULT_CHUNK_BYTES,
    DEFAULT_HISTOGRAM_MS,
    DEFAULT_INTERVAL_BYTES,
    SegmentExtract,
    extract_object,
)
from kafka_archive.catalog.identity import content_mismatch, key_mismatch
from kafka_archive.catalog.integrity import DEFAULT_VERIFY, VERIFY_CHOICES, ObjectIntegrityError
from kafka_archive.catalog.models import (
    BuildRun,
    ChainPiece,
    HistogramBucket,
    OffsetCommitRow,
    Partition,
    Segment,
    TimeIndexEntry,
    TxnMarker,
)
from kafka_archive.store import ObjectStore, StoreError, open_store
from segment_lib.errors import SegmentError

__all__ = [
    "VERIFY_ENV",
    "BuildReport",
    "ExtractTask",
    "InProcessRunner",
    "ProgressFn",
    "SegmentRef",
    "TaskResult",
    "TaskRunner",
    "build_catalog",
    "partition_id",
    "refs_from_manifests",
    "run_extract_task",
    "version_of_segment",
]

Pieces = tuple[tuple[int, int], ...]
#: environment variable naming the default whole-object check (``crc32c`` or ``sha256``)
VERIFY_ENV = "KAFKA_ARCHIVE_CATALOG_VERIFY"


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """One archived segment version, as its manifest describes it."""

    cluster: str
    topic: str
    partition: int
    manifest_key: str
    object_key: str
    size: int
    sha256: str | None
    base_offset: int
    archived_at_ms: int
    broker_id: int | None = None
    log_dir: str | None = None
    #: exclusive end of the segment's offset range (next segment's base offset), -1 unknown
    end_offset: int = -1
    #: CRC-32C of the whole ``.log`` (8 hex digits) from the manifest; ``None`` when unknown
    #: (refs rebuilt from catalog rows, which keep only the SHA-256)
    crc32c: str | None = None
    #: what the manifest recorded of the bytes, for the identity checks of
    #: :mod:`kafka_archive.catalog.identity` (``None``: unknown, not checked)
    first_offset: int | None = None
    last_offset: int | None = None
    batch_count: int | None = None
    record_count: int | None = None
    leader_epochs: tuple[int, ...] | None = None

    @property
    def partition_key(self) -> tuple[str, str, int]:
        return (self.cluster, self.topic, self.partition)


class ExtractTask(NamedTuple):
    """What one executor does: extract ``ref``'s object (restricted to ``pieces`` if given)."""

    store_uri: str
    store_options: Mapping[str, Any]
    ref: SegmentRef
    pieces: Pieces | None
    interval_bytes: int
    histogram_ms: int
    chunk_bytes: int
    #: whole-object check: ``crc32c`` or ``sha256`` (see :mod:`kafka_archive.catalog.integrity`)
    verify: str = DEFAULT_VERIFY


class TaskResult(NamedTuple):
    """An executor's answer: the extract, or the error (``corrupt``: bad bytes, recorded;
    otherwise a store failure, retried next run)."""

    ref: SegmentRef
    pieces: Pieces | None
    extract: SegmentExtract | None
    error: dict[str, Any] | None
    corrupt: bool
    bytes_read: int
    seconds: float


_STORES: dict[tuple[str, str], ObjectStore] = {}
_STORES_LOCK = threading.Lock()


def _store_for(uri: str, options: Mapping[str, Any]) -> ObjectStore:
    """One store per URI/options per process (executors reuse their connections)."""
    key = (uri, json.dumps(dict(options), sort_keys=True, default=str))
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = open_store(uri, **dict(options))
            _STORES[key] = store
        return store


def run_extract_task(task: ExtractTask) -> TaskResult:
    """Executor side: read the object from the store and extract it (never raises for bad
    bytes or store failures: they come back in the result)."""
    t0 = time.perf_counter()
    ref = task.ref
    try:
        store = _store_for(task.store_uri, task.store_options)
        ex = extract_object(
            store,
            ref.object_key,
            topic=ref.topic,
            size=ref.size,
            sha256=ref.sha256,
            crc32c=ref.crc32c,
            verify=task.verify,
            interval_bytes=task.interval_bytes,
            histogram_ms=task.histogram_ms,
            pieces=task.pieces,
            chunk_bytes=task.chunk_bytes,
        )
    except SegmentError as exc:
        return TaskResult(
            ref, task.pieces, None, exc.to_dict(), True, ref.size, time.perf_counter() - t0
        )
    except ObjectIntegrityError as exc:
        err = {**exc.to_dict(), "detail": str(exc), "key": ref.object_key}
        return TaskResult(ref, task.pieces, None, err, False, ref.size, time.perf_counter() - t0)
    except StoreError as exc:
        err = {"error": type(exc).__name__, "detail": str(exc), "key": ref.object_key}
        return TaskResult(ref, task.pieces, None, err, False, 0, time.perf_counter() - t0)
    return TaskResult(ref, task.pieces, ex, None, False, ref.size, time.perf_counter() - t0)


class TaskRunner(Protocol):
    """Runs extraction tasks somewhere (in-process, Spark...) and yields their results."""

    @property
    def parallelism(self) -> int: ...

    def run(self, tasks: Sequence[ExtractTask]) -> Iterator[TaskResult]: ...


class InProcessRunner:
    """Runs tasks in this process, ``threads`` at a time (the reference runner for tests)."""

    def __init__(self, threads: int = 1) -> None:
        self.threads = max(1, threads)

    @property
    def parallelism(self) -> int:
        return self.threads

    def run(self, tasks: Sequence[ExtractTask]) -> Iterator[TaskResult]:
        if self.threads == 1:
            for t in tasks:
                yield run_extract_task(t)
            return
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(self.threads) as pool:
            yield from pool.map(run_extract_task, tasks)


#: progress callback: (phase, done, total, bytes_done)
ProgressFn = Callable[[str, int, int, int], None]


@dataclass(slots=True)
class BuildReport:
    """What a build did (also stored as JSON in ``build_runs``)."""

    manifests: int = 0
    already_cataloged: int = 0
    segments_added: int = 0
    corrupt: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    re_extracted: int = 0
    intervals_added: int = 0
    commits_added: int = 0
    partitions_touched: int = 0
    deferred_partitions: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    run_id: int | None = None
    #: the integrity check used (``verify``)
    verify: str = DEFAULT_VERIFY
    #: refused manifests/objects, recorded in ``integrity_problems`` (``Problem.to_json()``)
    problems: list[dict[str, Any]] = field(default_factory=list)
    #: ids of earlier builds this one found dead and marked ``stale``
    stale_runs: list[int] = field(default_factory=list)
    #: new manifests not cataloged because a retention prune removed all their offsets
    pruned_skipped: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "manifests": self.manifests,
            "already_cataloged": self.already_cataloged,
            "segments_added": self.segments_added,
            "corrupt": self.corrupt,
            "failed": len(self.failed),
            "failures": self.failed,
            "re_extracted": self.re_extracted,
            "intervals_added": self.intervals_added,
            "commits_added": self.commits_added,
            "partitions_touched": self.partitions_touched,
            "deferred_partitions": self.deferred_partitions,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "run_id": self.run_id,
            "verify": self.verify,
            "problems": len(self.problems),
            "problem_list": self.problems,
            "stale_runs": self.stale_runs,
            "pruned_skipped": self.pruned_skipped,
        }


# ---------------------------------------------------------------------------------------------
# manifests


def refs_from_manifests(store: ObjectStore, cluster: str | None = None) -> list[SegmentRef]:
    """Every archived segment of ``cluster`` (all clusters when ``None``), from the archive's
    manifests."""
    from kafka_archive.catalog._manifests import list_manifests, read_refs

    return read_refs(store, list_manifests(store, cluster))


# ---------------------------------------------------------------------------------------------
# the driver


def partition_id(session: Session, cluster: str, topic: str, partition: int) -> int:
    """The id of a partition row, created if missing (safe against a concurrent creator)."""
    q = select(Partition.id).where(
        Partition.cluster == cluster, Partition.topic == topic, Partition.partition == partition
    )
    found = session.execute(q).scalar_one_or_none()
    if found is not None:
        return found
    try:
        with session.begin_nested():
            session.execute(
                insert(Partition).values(cluster=cluster, topic=topic, partition=partition)
            )
    except SqlIntegrityError:
        pass
    return session.execute(q).scalar_one()


@dataclass(slots=True)
class _Existing:
    """A partition's cataloged versions and chain, as read before extraction."""

    pid: int | None
    versions: dict[int, Version]
    pieces: dict[int, Pieces]
    refs: dict[int, SegmentRef]
    manifests: set[str]
    #: segments a retention prune removed (their rows stay, status ``pruned``)
    pruned: set[int] = field(default_factory=set)


@dataclass(slots=True)
class _Plan:
    """For one partition in one wave: the new results and what the chain makes of them."""

    key: tuple[str, str, int]
    existing: _Existing
    new: list[TaskResult]
    new_pieces: dict[int, Pieces]  # by version key (new versions: -(index+1))
    pass2: dict[int, TaskResult | None] = field(default_factory=dict)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _load_existing(session: Session, key: tuple[str, str, int]) -> _Existing:
    cluster, topic, part = key
    pid = session.execute(
        select(Partition.id).where(
            Partition.cluster == cluster, Partition.topic == topic, Partition.partition == part
        )
    ).scalar_one_or_none()
    versions: dict[int, Version] = {}
    refs: dict[int, SegmentRef] = {}
    pieces: dict[int, list[tuple[int, int]]] = defaultdict(list)
    manifests: set[str] = set()
    pruned: set[int] = set()
    if pid is None:
        return _Existing(None, {}, {}, {}, set())
    for s in session.execute(select(Segment).where(Segment.partition_id == pid)).scalars():
        manifests.add(s.manifest_key)
        refs[s.id] = SegmentRef(
            cluster,
            topic,
            part,
            s.manifest_key,
            s.object_key,
            s.size_bytes,
            s.sha256,
            s.base_offset,
            s.archived_at_ms,
            s.broker_id,
            s.log_dir,
            s.end_offset,
        )
        if s.status == "pruned":
            pruned.add(s.id)  # kept so its manifest is never cataloged again; not a version
            continue
        if s.status == "corrupt":
            continue
        versions[s.id] = version_of_segment(s)
    for p in session.execute(
        select(ChainPiece).where(ChainPiece.partition_id == pid).order_by(ChainPiece.lo)
    ).scalars():
        pieces[p.segment_id].append((p.lo, p.hi))
    return _Existing(
        pid, versions, {k: tuple(v) for k, v in pieces.items()}, refs, manifests, pruned
    )


def _runs(text: str) -> tuple[tuple[int, int, int], ...]:
    return tuple((int(a), int(b), int(c)) for a, b, c in json.loads(text or "[]"))


def version_of_segment(s: Segment) -> Version:
    """The chain's view of a cataloged segment row."""
    return Version(
        s.id,
        s.first_offset,
        s.last_offset,
        s.archived_at_ms,
        s.broker_id if s.broker_id is not None else -1,
        s.manifest_key,
        s.base_offset,
        s.end_offset,
        _runs(s.epoch_runs),
    )


def _version_of(key: int, r: TaskResult) -> Version | None:
    if r.extract is None:
        return None
    st = r.extract.stats
    return Version(
        key,
        st.first_offset,
        st.last_offset,
        r.ref.archived_at_ms,
        r.ref.broker_id if r.ref.broker_id is not None else -1,
        r.ref.manifest_key,
        r.ref.base_offset,
        r.ref.end_offset,
        st.epoch_runs,
    )


def _status(v: Version | None, pieces: Pieces, corrupt: bool) -> str:
    if corrupt or v is None:
        return "corrupt"
    if v.is_empty:
        return "empty"
    if not pieces:
        return "shadowed"
    if pieces == ((v.first_offset, v.last_offset),):
        return "canonical"
    return "partial"


def build_catalog(
    catalog: Catalog,
    store_uri: str,
    *,
    cluster: str | None = None,
    runner: TaskRunner | None = None,
    refs: Iterable[SegmentRef] | None = None,
    store_options: Mapping[str, Any] | None = None,
    interval_bytes: int = DEFAULT_INTERVAL_BYTES,
    histogram_ms: int = DEFAULT_HISTOGRAM_MS,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    wave_segments: int | None = None,
    progress: ProgressFn | None = None,
    verify: str | None = None,
) -> BuildReport:
    """Catalog every archived segment not cataloged yet (see the module docstring).

    Args:
        catalog: the open catalog.
        store_uri: the archive's object store (executors open it themselves).
        cluster: only this cluster's manifests (``None``: every cluster in the store).
        runner: where extraction runs (default: in this process).
        refs: the archived segments, when the caller already listed them (default: read the
            manifests from the store).
        interval_bytes / histogram_ms / chunk_bytes: extraction settings.
        wave_segments: most segments per wave (default: 32 per unit of runner parallelism,
            >= 256); waves are made equal in size.
        progress: called as segments are extracted and partitions written.
        verify: the integrity check, ``crc32c`` (default), ``crc32c-only`` or ``sha256``
            (:mod:`kafka_archive.catalog.integrity`); ``None`` reads
            ``$KAFKA_ARCHIVE_CATALOG_VERIFY`` (so every entry point honours it), else the
            default.
    """
    t0 = time.perf_counter()
    verify = verify or os.environ.get(VERIFY_ENV) or DEFAULT_VERIFY
    if verify not in VERIFY_CHOICES:
        raise ValueError(f"verify must be one of {VERIFY_CHOICES}, not {verify!r}")
    runner = runner if runner is not None else InProcessRunner()
    options = dict(store_options or {})
    report = BuildReport(verify=verify)
    host, pid = problems.owner()
    with catalog.session() as s, s.begin():
        report.stale_runs = problems.mark_stale_runs(s)
        run = BuildRun(
            cluster=cluster,
            store_uri=store_uri,
            started_at_ms=_now_ms(),
            status="running",
            summary="{}",
            owner_host=host,
            owner_pid=pid,
            heartbeat_ms=_now_ms(),
        )
        s.add(run)
        s.flush()
        report.run_id = run.id
        known = {
            (c, t, p, m)
            for c, t, p, m in s.execute(
                select(
                    Partition.cluster, Partition.topic, Partition.partition, Segment.manifest_key
                ).join(Segment, Segment.partition_id == Partition.id)
            )
        }
        from kafka_archive.catalog.prune import below_watermark, pruned_watermarks

        pruned_to = pruned_watermarks(s)
    if refs is None:
        # list every manifest key, fetch only the ones not cataloged yet
        from kafka_archive.catalog._manifests import list_manifests, read_refs_checked

        store = _store_for(store_uri, options)
        listed = list(list_manifests(store, cluster))
        fresh = [m for m in listed if (m.cluster, m.topic, m.partition, m.key) not in known]
        reading = read_refs_checked(store, fresh)
        all_refs, found, report.failed = reading.refs, reading.problems, reading.failed
        report.manifests = len(listed)
        extra_known = len(listed) - len(fresh)
    else:
        all_refs = [r for r in refs if cluster is None or r.cluster == cluster]
        report.manifests = len(all_refs)
        extra_known = 0
        found = []
    # misfiled by their keys: refused before their bytes are read
    all_refs = [r for r in all_refs if not _misfiled_by_key(r, found)]
    todo = sorted(
        (r for r in all_refs if (*r.partition_key, r.manifest_key) not in known),
        key=lambda r: (r.partition_key, r.base_offset, r.archived_at_ms, r.manifest_key),
    )
    report.already_cataloged = extra_known + len(all_refs) - len(todo)
    # a segment archived late (or again) whose offsets a prune already removed stays out: the
    # catalog says they were pruned, so serving them again would contradict it
    kept = [r for r in todo if not below_watermark(r, pruned_to)]
    report.pruned_skipped = len(todo) - len(kept)
    todo = kept
    # big waves amortize a Spark job's fixed cost (~0.3-0.5 s); results of a wave are small
    # (a few rows per MiB). Waves of equal size: 68 segments in waves of 64 would be a second
    # job for 4 segments, on fewer executors than there are.
    wave = wave_segments or max(256, 32 * runner.parallelism)
    if todo:
        waves = -(-len(todo) // wave)
        wave = -(-len(todo) // waves)
    done = 0
    done_bytes = 0
    written = 0
    status = "ok"
    heartbeat = problems.Heartbeat(catalog, report.run_id)
    cataloged: list[str] = []  # manifest keys written this run (their old problems are gone)

    def task(ref: SegmentRef, pieces: Pieces | None) -> ExtractTask:
        return ExtractTask(
            store_uri, options, ref, pieces, interval_bytes, histogram_ms, chunk_bytes, verify
        )

    if progress:
        progress("extract", 0, len(todo), 0)
    try:
        for w in range(0, len(todo), wave):
            batch = todo[w : w + wave]
            results: list[TaskResult] = []
            for r in runner.run([task(ref, None) for ref in batch]):
                results.append(r)
                done += 1
                done_bytes += r.ref.size
                report.bytes_read += r.bytes_read
                heartbeat.beat()
                if progress:
                    progress("extract", done, len(todo), done_bytes)
            by_part: dict[tuple[str, str, int], list[TaskResult]] = defaultdict(list)
            for r in _triage(results, report, found):
                by_part[r.ref.partition_key].append(r)
            plans = _plan(catalog, by_part)
            jobs: dict[tuple[tuple[str, str, int], str], tuple[_Plan, int]] = {}
            pass2: list[ExtractTask] = []
            for plan in plans:
                for k, pieces in _pass2_needed(plan).items():
                    ref = plan.existing.refs[k] if k > 0 else plan.new[-k - 1].ref
                    jobs[(ref.partition_key, ref.manifest_key)] = (plan, k)
                    pass2.append(task(ref, pieces))
            for r in runner.run(pass2) if pass2 else ():
                report.bytes_read += r.bytes_read
                plan, k = jobs[(r.ref.partition_key, r.ref.manifest_key)]
                plan.pass2[k] = r
            for plan in plans:
                outcome = _write_partition(catalog, plan, report)
                written += 1
                heartbeat.beat()
                if outcome == "deferred":
                    report.deferred_partitions += 1
                else:
                    report.partitions_touched += 1
                    cataloged.extend(r.ref.manifest_key for r in plan.new)
                if progress:
                    progress("write", written, len(plans), done_bytes)
    except BaseException:
        status = "failed"
        raise
    finally:
        report.seconds = time.perf_counter() - t0
        report.problems = [p.to_json() for p in found]
        with catalog.session() as s, s.begin():
            problems.clear_problems(s, cataloged, "build")
            problems.record_problems(s, found, "build")
            s.execute(
                update(BuildRun)
                .where(BuildRun.id == report.run_id)
                .values(
                    finished_at_ms=_now_ms(),
                    status=status,
                    summary=json.dumps(report.to_json(), default=str),
                )
            )
    return report


def _misfiled_by_key(ref: SegmentRef, found: list[problems.Problem]) -> bool:
    reason = key_mismatch(ref)
    if reason is not None:
        found.append(problems.Problem.of_ref("misfiled", ref, reason))
    return reason is not None


def _triage(
    results: Iterable[TaskResult], report: BuildReport, found: list[problems.Problem]
) -> Iterator[TaskResult]:
    """The results to catalog. Store failures go to ``report.failed`` (retried next run);
    bytes that differ from the manifest (``corrupt``), an object that is gone
    (``unreadable``) and bytes that do not belong where the manifest says (``misfiled``) are
    also recorded as problems. Corrupt segments (bytes as archived, but bad) are cataloged as
    such."""
    for r in results:
        if r.error is not None and not r.corrupt:
            report.failed.append({"manifest_key": r.ref.manifest_key, **r.error})
            kind = {"ObjectIntegrityError": "corrupt", "ObjectNotFound": "unreadable"}.get(
                str(r.error.get("error")), ""
            )
            if kind:
                detail = str(r.error.get("detail") or r.error.get("message"))
                found.append(problems.Problem.of_ref(kind, r.ref, detail, r.error.get("position")))
            continue
        reason = content_mismatch(r.ref, r.extract.stats) if r.extract is not None else None
        if reason is not None:
            found.append(problems.Problem.of_ref("misfiled", r.ref, reason))
            continue
        yield r


def _key_for(plan: _Plan, manifest_key: str) -> int:
    for k, ref in plan.existing.refs.items():
        if ref.manifest_key == manifest_key:
            return k
    for i, r in enumerate(plan.new):
        if r.ref.manifest_key == manifest_key:
            return -(i + 1)
    raise KeyError(manifest_key)


def _plan(
    catalog: Catalog, by_part: Mapping[tuple[str, str, int], list[TaskResult]]
) -> list[_Plan]:
    plans = []
    with catalog.session() as s:
        for key in sorted(by_part):
            existing = _load_existing(s, key)
            new = [r for r in by_part[key] if r.ref.manifest_key not in existing.manifests]
            versions = list(existing.versions.values())
            for i, r in enumerate(new):
                v = _version_of(-(i + 1), r)
                if v is not None:
                    versions.append(v)
            pieces = {k: tuple(v) for k, v in compute_pieces(versions).items()}
            plans.append(_Plan(key, existing, new, pieces))
    return plans


def _pass2_needed(plan: _Plan) -> dict[int, Pieces]:
    """Versions to extract again restricted to their (new) pieces."""
    out: dict[int, Pieces] = {}
    for k, pieces in plan.new_pieces.items():
        if k < 0:
            r = plan.new[-k - 1]
            assert r.extract is not None
            st = r.extract.stats
            if pieces and pieces != ((st.first_offset, st.last_offset),):
                out[k] = pieces
        elif pieces != plan.existing.pieces.get(k, ()) and pieces:
            out[k] = pieces
    return out


def _table(model: type[Any]) -> Table:
    """A model's Core table: Core executemany inserts skip the ORM's per-row work."""
    tbl = model.__table__
    assert isinstance(tbl, Table)
    return tbl


def _write_partition(catalog: Catalog, plan: _Plan, report: BuildReport) -> str:
    """One transaction: everything this wave changes in one partition."""
    cluster, topic, part = plan.key
    with catalog.session() as s, s.begin():
        pid = partition_id(s, cluster, topic, part)
        if s.get_bind().dialect.name == "postgresql":
            # serialize concurrent builders on this partition
            from sqlalchemy import text

            s.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": 7_340_000_000 + pid})
        current = {
            row[0]
            for row in s.execute(
                select(Segment.id).where(Segment.partition_id == pid, Segment.status != "pruned")
            )
        }
        if current != set(plan.existing.refs) - plan.existing.pruned:
            return "deferred"  # another build changed this partition; the next run redoes it
        now = _now_ms()
        ids: dict[int, int] = {k: k for k in plan.existing.refs}
        extracts: dict[int, SegmentExtract | None] = {}
        seg_rows: list[dict[str, Any]] = []
        for i, r in enumerate(plan.new):
            k = -(i + 1)
            pieces = plan.new_pieces.get(k, ())
            st = r.extract.stats if r.extract is not None else None
            v = _version_of(k, r)
            row: dict[str, Any] = dict(
                partition_id=pid,
                manifest_key=r.ref.manifest_key,
                object_key=r.ref.object_key,
                sha256=r.ref.sha256,
                broker_id=r.ref.broker_id,
                log_dir=r.ref.log_dir,
                archived_at_ms=r.ref.archived_at_ms,
                base_offset=r.ref.base_offset,
                end_offset=r.ref.end_offset,
                status=_status(v, pieces, r.corrupt),
                cataloged_at_ms=now,
                error=json.dumps(r.error) if r.error else None,
            )
            if st is not None:
                row.update(
                    first_offset=st.first_offset,
                    last_offset=st.last_offset,
                    first_timestamp=st.first_timestamp,
                    max_timestamp=st.max_timestamp,
                    offset_of_max_timestamp=st.offset_of_max_timestamp,
                    record_count=st.record_count,
                    batch_count=st.batch_count,
                    size_bytes=st.size_bytes,
                    codecs=",".join(st.codecs),
                    magics=",".join(str(m) for m in st.magics),
                    transactional_batches=st.transactional_batches,
                    control_batches=st.control_batches,
                    epoch_runs=st.epoch_runs_json(),
                )
            else:
                row.update(
                    first_offset=-1,
                    last_offset=-1,
                    first_timestamp=-1,
                    max_timestamp=-1,
                    offset_of_max_timestamp=-1,
                    record_count=0,
                    batch_count=0,
                    size_bytes=r.ref.size,
                    codecs="",
                    magics="",
                    transactional_batches=0,
                    control_batches=0,
                    epoch_runs="[]",
                )
            seg_rows.append(row)
        # one executemany (Core, RETURNING in parameter order) instead of a statement per row:
        # the ORM and per-row compiles cost more than SQLite's work at these row counts
        new_ids: list[int] = []
        if seg_rows:
            seg_tbl = _table(Segment)
            new_ids = [
                row_id
                for (row_id,) in s.execute(
                    insert(seg_tbl).returning(seg_tbl.c.id, sort_by_parameter_order=True),
                    seg_rows,
                )
            ]
        for i, r in enumerate(plan.new):
            k = -(i + 1)
            pieces = plan.new_pieces.get(k, ())
            ids[k] = new_ids[i]
            report.segments_added += 1
            if r.corrupt:
                report.corrupt += 1
                continue
            if not pieces:
                extracts[k] = None
            elif k in plan.pass2:
                extracts[k] = _pass2_extract(plan.pass2[k], report)
            else:
                extracts[k] = r.extract
        # existing versions whose share of the chain changed
        changed_lo: int | None = None
        for k, pieces in plan.new_pieces.items():
            if k < 0:
                continue
            old = plan.existing.pieces.get(k, ())
            if pieces == old:
                continue
            report.re_extracted += 1 if pieces else 0
            for tbl in (TimeIndexEntry, HistogramBucket, ChainPiece):
                s.execute(delete(tbl).where(tbl.partition_id == pid, tbl.segment_id == k))
            s.execute(delete(OffsetCommitRow).where(OffsetCommitRow.segment_id == k))
            s.execute(delete(TxnMarker).where(TxnMarker.segment_id == k))
            lo = min((p[0] for p in (*old, *pieces)), default=None)
            if lo is not None:
                changed_lo = lo if changed_lo is None else min(changed_lo, lo)
            extracts[k] = _pass2_extract(plan.pass2[k], report) if pieces else None
            s.execute(
                update(Segment)
                .where(Segment.id == k)
                .values(status=_status(plan.existing.versions.get(k), pieces, False))
            )
        # chain pieces of new and changed versions
        piece_rows = [
            {"partition_id": pid, "lo": lo, "hi": hi, "segment_id": ids[k]}
            for k, ex in extracts.items()
            for lo, hi in plan.new_pieces.get(k, ())
            if ex is not None
        ]
        if piece_rows:
            s.execute(insert(_table(ChainPiece)), piece_rows)
        interval_rows: list[dict[str, Any]] = []
        hist_rows: list[dict[str, Any]] = []
        for k, ex in extracts.items():
            if ex is None:
                continue
            sid = ids[k]
            for iv in ex.intervals:
                interval_rows.append(
                    {
                        "partition_id": pid,
                        "start_offset": iv.start_offset,
                        "end_offset": iv.end_offset,
                        "segment_id": sid,
                        "byte_start": iv.byte_start,
                        "byte_end": iv.byte_end,
                        "max_ts": iv.max_ts,
                        "record_max_ts": iv.record_max_ts,
                        "running_max_ts": -1,
                        "record_count": iv.record_count,
                    }
                )
            for h in ex.histogram:
                hist_rows.append(
                    {
                        "partition_id": pid,
                        "bucket_ms": h.bucket_ms,
                        "segment_id": sid,
                        "records": h.records,
                        "bytes": h.bytes,
                    }
                )
        if interval_rows:
            lo = min(r["start_offset"] for r in interval_rows)
            changed_lo = lo if changed_lo is None else min(changed_lo, lo)
        _write_intervals(s, pid, interval_rows, changed_lo)
        report.intervals_added += len(interval_rows)
        if hist_rows:
            s.execute(insert(_table(HistogramBucket)), hist_rows)
        if topic == CONSUMER_OFFSETS_TOPIC:
            report.commits_added += _write_offsets(s, cluster, pid, extracts, ids, changed_lo)
    return "written"


def _pass2_extract(r: TaskResult | None, report: BuildReport) -> SegmentExtract | None:
    if r is None or r.extract is None:
        detail = r.error if r is not None else {"error": "missing pass-2 result"}
        raise RuntimeError(
            f"re-extraction of a segment restricted to its chain pieces failed: {detail}"
        )
    return r.extract


def _write_intervals(
    s: Session, pid: int, new_rows: list[dict[str, Any]], changed_lo: int | None
) -> None:
    """Insert ``new_rows`` and make ``running_max_ts`` right from ``changed_lo`` on."""
    if changed_lo is None:
        return
    prev = s.execute(
        select(TimeIndexEntry.running_max_ts)
        .where(TimeIndexEntry.partition_id == pid, TimeIndexEntry.start_offset < changed_lo)
        .order_by(TimeIndexEntry.start_offset.desc())
        .limit(1)
    ).scalar_one_or_none()
    later = s.execute(
        select(TimeIndexEntry.start_offset, TimeIndexEntry.max_ts, TimeIndexEntry.running_max_ts)
        .where(TimeIndexEntry.partition_id == pid, TimeIndexEntry.start_offset >= changed_lo)
        .order_by(TimeIndexEntry.start_offset)
    ).all()
    merged: list[tuple[int, int, dict[str, Any] | None, int]] = [
        (so, mx, None, rm) for so, mx, rm in later
    ]
    merged.extend((r["start_offset"], r["max_ts"], r, -2) for r in new_rows)
    merged.sort(key=lambda t: t[0])
    cur = -1 if prev is None else prev
    updates = []
    for so, mx, row, old in merged:
        if mx > cur:
            cur = mx
        if row is not None:
            row["running_max_ts"] = cur
        elif old != cur:
            updates.append({"pid": pid, "so": so, "rm": cur})
    if new_rows:
        s.execute(insert(_table(TimeIndexEntry)), new_rows)
    if updates:
        from sqlalchemy import bindparam

        s.connection().execute(
            update(TimeIndexEntry.__table__)  # type: ignore[arg-type]
            .where(
                TimeIndexEntry.__table__.c.partition_id == bindparam("pid"),
                TimeIndexEntry.__table__.c.start_offset == bindparam("so"),
            )
            .values(running_max_ts=bindparam("rm")),
            updates,
        )


def _write_offsets(
    s: Session,
    cluster: str,
    pid: int,
    extracts: Mapping[int, SegmentExtract | None],
    ids: Mapping[int, int],
    changed_lo: int | None,
) -> int:
    """Commits and markers of a ``__consumer_offsets`` partition; then resolve transactional
    commits from ``changed_lo`` on (a later marker can only change those)."""
    commit_rows: list[dict[str, Any]] = []
    marker_rows: list[dict[str, Any]] = []
    for k, ex in extracts.items():
        if ex is None:
            continue
        sid = ids[k]
        for c in ex.commits:
            txn = c.transactional
            commit_rows.append(
                {
                    "cluster": cluster,
                    "group_id": c.group,
                    "topic": c.topic,
                    "partition": c.partition,
                    "kind": c.kind,
                    "committed_offset": c.offset,
                    "leader_epoch": c.leader_epoch,
                    "metadata_text": c.metadata,
                    "commit_timestamp": c.commit_timestamp,
                    "expire_timestamp": c.expire_timestamp,
                    "source_partition_id": pid,
                    "segment_id": sid,
                    "log_offset": c.log_offset,
                    "record_timestamp": c.record_timestamp,
                    "producer_id": c.producer_id,
                    "txn_state": "pending" if txn else "none",
                    "effective_offset": None if txn else c.log_offset,
                    "visible_ts": None if txn else c.record_timestamp,
                }
            )
        for m in ex.markers:
            marker_rows.append(
                {
                    "source_partition_id": pid,
                    "log_offset": m.log_offset,
                    "producer_id": m.producer_id,
                    "committed": int(m.committed),
                    "timestamp": m.timestamp,
                    "segment_id": sid,
                }
            )
    if commit_rows:
        s.execute(insert(_table(OffsetCommitRow)), commit_rows)
    if marker_rows:
        s.execute(insert(_table(TxnMarker)), marker_rows)
    if changed_lo is None:
        return len(commit_rows)
    oc = OffsetCommitRow
    pending = s.execute(
        select(oc.id, oc.producer_id, oc.log_offset, oc.txn_state, oc.effective_offset)
        .where(
            oc.source_partition_id == pid,
            oc.producer_id >= 0,
            (oc.txn_state == "pending")
            | (oc.effective_offset >= changed_lo)
            | (oc.log_offset >= changed_lo),
        )
        .order_by(oc.log_offset)
    ).all()
    if not pending:
        return len(commit_rows)
    producers = {p.producer_id for p in pending}
    start = min(p.log_offset for p in pending)
    markers: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for mk in s.execute(
        select(
            TxnMarker.producer_id, TxnMarker.log_offset, TxnMarker.committed, TxnMarker.timestamp
        )
        .where(
            TxnMarker.source_partition_id == pid,
            TxnMarker.log_offset > start,
            TxnMarker.producer_id.in_(producers),
        )
        .order_by(TxnMarker.log_offset)
    ):
        markers[mk.producer_id].append((mk.log_offset, mk.committed, mk.timestamp))
    import bisect

    updates = []
    for p in pending:
        ms = markers.get(p.producer_id, [])
        i = bisect.bisect_right([m[0] for m in ms], p.log_offset)
        if i < len(ms):
            off, committed, ts = ms[i]
            state = "committed" if committed else "aborted"
            eff, vis = (off, ts) if committed else (None, None)
        else:
            state, eff, vis = "pending", None, None
        updates.append({"i": p.id, "st": state, "eo": eff, "vt": vis})
    from sqlalchemy import bindparam

    tbl = OffsetCommitRow.__table__
    s.connection().execute(
        update(tbl)  # type: ignore[arg-type]
        .where(tbl.c.id == bindparam("i"))
        .values(
            txn_state=bindparam("st"), effective_offset=bindparam("eo"), visible_ts=bindparam("vt")
        ),
        updates,
    )
    return len(commit_rows)
