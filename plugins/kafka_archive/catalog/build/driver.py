"""The catalog build driver: which archived segments are new, what to extract, idempotent writes.

Independent of Spark: the extraction of segment objects is handed to a
:class:`~kafka_archive.catalog.build.tasks.TaskRunner` (in-process by default;
:mod:`kafka_archive.spark.session` runs the same
:func:`~kafka_archive.catalog.build.tasks.run_extract_task` on Spark executors). The driver does
the rest (planning in :mod:`~kafka_archive.catalog.build.plan`, writes in
:mod:`~kafka_archive.catalog.build.write`):

1. list the archived segments (one :class:`~kafka_archive.catalog.refs.SegmentRef` per
   manifest, :mod:`kafka_archive.catalog._manifests`) and drop the ones the
   catalog already holds (``segments`` has a unique ``(partition, manifest_key)``); the rest,
   the increment, decides the runner when the caller lets it (``select_runner``:
   :mod:`~kafka_archive.catalog.build.engine`: a few segments never start Spark);
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
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from kafka_archive.catalog import problems
from kafka_archive.catalog._manifests import list_manifests, read_refs_checked
from kafka_archive.catalog.build.engine import Increment, RunnerSelector
from kafka_archive.catalog.build.plan import PartitionPlan, pass2_needed, plan_partitions
from kafka_archive.catalog.build.report import BuildReport, ProgressFn
from kafka_archive.catalog.build.store_cache import store_for
from kafka_archive.catalog.build.tasks import (
    ExtractTask,
    InProcessRunner,
    Pieces,
    TaskResult,
    TaskRunner,
)
from kafka_archive.catalog.build.write import write_partition
from kafka_archive.catalog.constants import (
    DEFAULT_CHUNK_BYTES,
    DEFAULT_HISTOGRAM_MS,
    DEFAULT_INTERVAL_BYTES,
)
from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.identity import content_mismatch, key_mismatch
from kafka_archive.catalog.integrity import DEFAULT_VERIFY, VERIFY_CHOICES
from kafka_archive.catalog.liveness import this_process
from kafka_archive.catalog.models import BuildRun, Partition, Segment
from kafka_archive.catalog.prune import below_watermark
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.catalog.stability import refresh_stability
from kafka_archive.settings import env_var, load_settings
from kafka_archive.timeparse import now_ms

__all__ = ["VERIFY_ENV", "build_catalog", "list_increment"]

#: environment variable naming the default whole-object check (``crc32c`` or ``sha256``)
VERIFY_ENV = env_var("catalog_verify")


def build_catalog(
    catalog: Catalog,
    store_uri: str,
    *,
    cluster: str | None = None,
    runner: TaskRunner | None = None,
    select_runner: RunnerSelector | None = None,
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
        select_runner: instead of ``runner``, picks it once the increment is known (the
            segments not cataloged yet and their bytes; :mod:`~kafka_archive.catalog.build.
            engine`), so that a small increment never starts Spark.
        refs: the archived segments, when the caller already listed them (default: read the
            manifests from the store).
        interval_bytes / histogram_ms / chunk_bytes: extraction settings.
        wave_segments: most segments per wave (default: 32 per unit of runner parallelism,
            >= 256); waves are made equal in size.
        progress: called as segments are extracted and partitions written.
        verify: the integrity check, ``crc32c`` (default), ``crc32c-only`` or ``sha256``
            (:mod:`kafka_archive.catalog.integrity`); ``None``: the ``catalog_verify`` setting
            (:mod:`kafka_archive.settings`, so every entry point honours it).
    """
    t0 = time.perf_counter()
    verify = verify or load_settings().catalog_verify or DEFAULT_VERIFY
    if verify not in VERIFY_CHOICES:
        raise ValueError(f"verify must be one of {VERIFY_CHOICES}, not {verify!r}")
    if runner is not None and select_runner is not None:
        raise ValueError("give runner or select_runner, not both")
    options = dict(store_options or {})
    report = BuildReport(verify=verify)
    known = _start_run(catalog, cluster, store_uri, report)
    todo, found = _todo(catalog, store_uri, options, cluster, refs, known, report)
    status = "ok"
    cataloged: list[str] = []

    def task(ref: SegmentRef, pieces: Pieces | None) -> ExtractTask:
        return ExtractTask(
            store_uri, options, ref, pieces, interval_bytes, histogram_ms, chunk_bytes, verify
        )

    try:
        # inside the try: a Spark that does not start fails this run (recorded as failed)
        runner = _pick_runner(runner, select_runner, report)
        wave = _wave_size(len(todo), wave_segments, runner)
        run = _Run(
            catalog,
            runner,
            task,
            report,
            found,
            problems.Heartbeat(catalog, report.run_id),
            progress,
        )
        run.total = len(todo)
        cataloged = run.cataloged
        if progress:
            progress("extract", 0, len(todo), 0)
        for w in range(0, len(todo), wave):
            _build_wave(run, todo[w : w + wave])
        # every partition's last stable offset, for the chain as this build leaves it (reads
        # only the segments with transactional or control batches not read before)
        refresh_stability(catalog, store_for(store_uri, options))
    except BaseException:
        status = "failed"
        raise
    finally:
        report.seconds = time.perf_counter() - t0
        _finish_run(catalog, report, found, cataloged, status)
    return report


def _pick_runner(
    runner: TaskRunner | None, select_runner: RunnerSelector | None, report: BuildReport
) -> TaskRunner:
    """The runner of this build, its engine and why in ``report`` (a given runner is the
    caller's choice; without either, threads in this process)."""
    if select_runner is not None:
        chosen, choice = select_runner(Increment(report.new_segments, report.new_bytes))
        report.engine, report.engine_reason = choice.engine, choice.reason
        return chosen
    chosen = runner if runner is not None else InProcessRunner()
    report.engine = str(getattr(chosen, "engine", type(chosen).__name__))
    report.engine_reason = "runner given by the caller" if runner is not None else "default"
    return chosen


def list_increment(
    catalog: Catalog,
    store_uri: str,
    *,
    cluster: str | None = None,
    store_options: Mapping[str, Any] | None = None,
) -> Increment:
    """What a build would extract now (the segments :func:`build_catalog` would find new, and
    their bytes), without building: reads the catalog and the new manifests, writes nothing.
    For a caller that picks where the build runs before starting it (the catalog DAG decides
    between building in its task and ``spark-submit``)."""
    with catalog.session() as s:
        known = _known_keys(s)
    todo, _found = _todo(
        catalog, store_uri, dict(store_options or {}), cluster, None, known, BuildReport()
    )
    return Increment(len(todo), sum(r.size for r in todo))


def _todo(
    catalog: Catalog,
    store_uri: str,
    options: Mapping[str, Any],
    cluster: str | None,
    refs: Iterable[SegmentRef] | None,
    known: set[tuple[str, str, int, str]],
    report: BuildReport,
) -> tuple[list[SegmentRef], list[problems.Problem]]:
    """The segments to extract, in order, and the problems found listing them; the counts go
    to ``report`` (``manifests``, ``already_cataloged``, ``pruned_skipped``, the increment)."""
    all_refs, found, extra_known = _list_refs(store_uri, options, cluster, refs, known, report)
    # misfiled by their keys: refused before their bytes are read
    all_refs = [r for r in all_refs if not _misfiled_by_key(r, found)]
    todo = sorted(
        (r for r in all_refs if (*r.partition_key, r.manifest_key) not in known),
        key=lambda r: (r.partition_key, r.base_offset, r.archived_at_ms, r.manifest_key),
    )
    report.already_cataloged = extra_known + len(all_refs) - len(todo)
    # a segment archived late (or again) whose offsets a prune already removed stays out: the
    # catalog says they were pruned, so serving them again would contradict it
    marks = _pruned_watermarks(catalog)
    kept = [r for r in todo if not below_watermark(r, marks)]
    report.pruned_skipped = len(todo) - len(kept)
    report.new_segments, report.new_bytes = len(kept), sum(r.size for r in kept)
    return kept, found


def _pruned_watermarks(catalog: Catalog) -> dict[tuple[str, str, int], int]:
    from kafka_archive.catalog.prune import pruned_watermarks

    with catalog.session() as s:
        return pruned_watermarks(s)


def _start_run(
    catalog: Catalog, cluster: str | None, store_uri: str, report: BuildReport
) -> set[tuple[str, str, int, str]]:
    """Mark dead builds stale, record this one as running (``report.run_id``); what the
    catalog holds already, as (cluster, topic, partition, manifest key)."""
    host, pid = this_process()
    with catalog.session() as s, s.begin():
        report.stale_runs = problems.mark_stale_runs(s)
        run = BuildRun(
            cluster=cluster,
            store_uri=store_uri,
            started_at_ms=now_ms(),
            status="running",
            summary="{}",
            owner_host=host,
            owner_pid=pid,
            heartbeat_ms=now_ms(),
        )
        s.add(run)
        s.flush()
        report.run_id = run.id
        return _known_keys(s)


def _known_keys(s: Session) -> set[tuple[str, str, int, str]]:
    """What the catalog holds, as (cluster, topic, partition, manifest key)."""
    return {
        (c, t, p, m)
        for c, t, p, m in s.execute(
            select(
                Partition.cluster, Partition.topic, Partition.partition, Segment.manifest_key
            ).join(Segment, Segment.partition_id == Partition.id)
        )
    }


def _list_refs(
    store_uri: str,
    options: Mapping[str, Any],
    cluster: str | None,
    refs: Iterable[SegmentRef] | None,
    known: set[tuple[str, str, int, str]],
    report: BuildReport,
) -> tuple[list[SegmentRef], list[problems.Problem], int]:
    """The segments to consider (the given ``refs``, else the manifests not cataloged yet), the
    problems found reading manifests, and how many listed manifests were skipped as known."""
    if refs is None:
        # list every manifest key, fetch only the ones not cataloged yet
        store = store_for(store_uri, options)
        listed = list(list_manifests(store, cluster))
        fresh = [m for m in listed if (m.cluster, m.topic, m.partition, m.key) not in known]
        reading = read_refs_checked(store, fresh)
        report.failed = reading.failed
        report.manifests = len(listed)
        return reading.refs, reading.problems, len(listed) - len(fresh)
    all_refs = [r for r in refs if cluster is None or r.cluster == cluster]
    report.manifests = len(all_refs)
    return all_refs, [], 0


def _wave_size(todo: int, wave_segments: int | None, runner: TaskRunner) -> int:
    """Segments per wave. Big waves amortize a Spark job's fixed cost (~0.3-0.5 s); results of
    a wave are small (a few rows per MiB). Waves of equal size: 68 segments in waves of 64
    would be a second job for 4 segments, on fewer executors than there are."""
    wave = wave_segments or max(256, 32 * runner.parallelism)
    if todo:
        waves = -(-todo // wave)
        wave = -(-todo // waves)
    return wave


@dataclass(slots=True)
class _Run:
    """What the waves of one build share, and its progress counters."""

    catalog: Catalog
    runner: TaskRunner
    task: Callable[[SegmentRef, Pieces | None], ExtractTask]
    report: BuildReport
    found: list[problems.Problem]
    heartbeat: problems.Heartbeat
    progress: ProgressFn | None
    total: int = 0
    done: int = 0
    done_bytes: int = 0
    written: int = 0
    #: manifest keys written this run (their old problems are gone)
    cataloged: list[str] = field(default_factory=list)


def _build_wave(run: _Run, batch: list[SegmentRef]) -> None:
    """Pass 1 over ``batch``, the plans, pass 2 where needed, the writes."""
    by_part: dict[tuple[str, str, int], list[TaskResult]] = defaultdict(list)
    for r in _triage(_extract(run, batch), run.report, run.found):
        by_part[r.ref.partition_key].append(r)
    plans = plan_partitions(run.catalog, by_part)
    _extract_pass2(run, plans)
    _write_plans(run, plans)


def _extract(run: _Run, batch: list[SegmentRef]) -> list[TaskResult]:
    """Pass 1: every segment of the wave, whole."""
    results: list[TaskResult] = []
    for r in run.runner.run([run.task(ref, None) for ref in batch]):
        results.append(r)
        run.done += 1
        run.done_bytes += r.ref.size
        run.report.bytes_read += r.bytes_read
        run.heartbeat.beat()
        if run.progress:
            run.progress("extract", run.done, run.total, run.done_bytes)
    return results


def _extract_pass2(run: _Run, plans: list[PartitionPlan]) -> None:
    """Pass 2: the versions the chain serves only in part, restricted to their pieces (the
    results go to each plan's ``pass2``)."""
    jobs: dict[tuple[tuple[str, str, int], str], tuple[PartitionPlan, int]] = {}
    pass2: list[ExtractTask] = []
    for plan in plans:
        for k, pieces in pass2_needed(plan).items():
            ref = plan.existing.refs[k] if k > 0 else plan.new[-k - 1].ref
            jobs[(ref.partition_key, ref.manifest_key)] = (plan, k)
            pass2.append(run.task(ref, pieces))
    for r in run.runner.run(pass2) if pass2 else ():
        run.report.bytes_read += r.bytes_read
        plan, k = jobs[(r.ref.partition_key, r.ref.manifest_key)]
        plan.pass2[k] = r


def _write_plans(run: _Run, plans: list[PartitionPlan]) -> None:
    """One transaction per partition (the manifest keys written go to ``run.cataloged`` as
    each commits; deferred partitions' do not)."""
    for plan in plans:
        outcome = write_partition(run.catalog, plan, run.report)
        run.written += 1
        run.heartbeat.beat()
        if outcome == "deferred":
            run.report.deferred_partitions += 1
        else:
            run.report.partitions_touched += 1
            run.cataloged.extend(r.ref.manifest_key for r in plan.new)
        if run.progress:
            run.progress("write", run.written, len(plans), run.done_bytes)


def _finish_run(
    catalog: Catalog,
    report: BuildReport,
    found: list[problems.Problem],
    cataloged: list[str],
    status: str,
) -> None:
    """Record the problems found (clearing those of what was cataloged) and the run's end."""
    report.problems = [p.to_json() for p in found]
    with catalog.session() as s, s.begin():
        problems.clear_problems(s, cataloged, "build")
        problems.record_problems(s, found, "build")
        s.execute(
            update(BuildRun)
            .where(BuildRun.id == report.run_id)
            .values(
                finished_at_ms=now_ms(),
                status=status,
                summary=json.dumps(report.to_json(), default=str),
            )
        )


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
