"""The executor task protocol: what one extraction task carries, what it answers, who runs it.

The driver (:mod:`kafka_archive.catalog.build.driver`) makes one :class:`ExtractTask` per segment
object (restricted to its chain pieces in pass 2) and hands a wave of them to a
:class:`TaskRunner`: :class:`InProcessRunner` here, ``SparkRunner``
(:mod:`kafka_archive.spark.session`) on Spark executors. Either runs :func:`run_extract_task`,
which reads the object from the store and extracts it (:mod:`kafka_archive.catalog.extract`)
and never raises for bad bytes or store failures: they come back in the :class:`TaskResult`.
Tasks and results are pickled to and from executors, so they hold plain values only.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from kafka_archive.catalog.build.store_cache import store_for
from kafka_archive.catalog.extract import SegmentExtract, extract_object
from kafka_archive.catalog.integrity import DEFAULT_VERIFY, ObjectIntegrityError
from kafka_archive.catalog.refs import SegmentRef
from kafka_archive.store import StoreError
from segment_lib.errors import SegmentError

__all__ = [
    "ExtractTask",
    "InProcessRunner",
    "Pieces",
    "TaskResult",
    "TaskRunner",
    "run_extract_task",
]

Pieces = tuple[tuple[int, int], ...]


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


def run_extract_task(task: ExtractTask) -> TaskResult:
    """Executor side: read the object from the store and extract it (never raises for bad
    bytes or store failures: they come back in the result)."""
    t0 = time.perf_counter()
    ref = task.ref
    try:
        store = store_for(task.store_uri, task.store_options)
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

    #: the engine this runner is, for the build report
    engine = "in-process"

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
