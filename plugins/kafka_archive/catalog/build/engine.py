"""Which engine extracts a build's increment: this process, or Spark (issue 27).

Spark has a fixed cost that does not depend on the work: starting its JVM and Python workers
(~7 s on the 2-core reference machine) and ~0.3-0.5 s per job. A build that finds a few new
segments would spend nearly all of its time on that, so the default engine, ``auto``, looks at
the **increment** first (the segments not cataloged yet and their bytes, from their manifests:
nothing is read from the objects to know it) and runs in this process unless the increment
reaches the Spark threshold, in bytes or in segments, whichever comes first
(:data:`DEFAULT_SPARK_THRESHOLD_BYTES`, :data:`DEFAULT_SPARK_THRESHOLD_SEGMENTS`; the settings
``catalog_spark_threshold_bytes`` / ``catalog_spark_threshold_segments``). ``in-process`` and
``spark`` force one engine. docs/performance.md has the measurements behind the defaults.

This module only decides and explains (:func:`choose_engine` -> :class:`EngineChoice`); whoever
holds a Spark master starts the runner (:class:`~kafka_archive.services.catalog_build.
CatalogBuildService`), so that nothing of Spark is imported when it is not chosen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from kafka_archive.settings import CATALOG_SPARK_THRESHOLD_BYTES, CATALOG_SPARK_THRESHOLD_SEGMENTS
from kafka_archive.sizes import format_bytes

if TYPE_CHECKING:
    from kafka_archive.catalog.build.tasks import TaskRunner

__all__ = [
    "DEFAULT_SPARK_THRESHOLD_BYTES",
    "DEFAULT_SPARK_THRESHOLD_SEGMENTS",
    "ENGINES",
    "EngineChoice",
    "Increment",
    "RunnerSelector",
    "choose_engine",
]

Engine = Literal["in-process", "spark"]
#: what a build may be asked to use (``auto``: by the size of the increment)
ENGINES: Final = ("auto", "in-process", "spark")
#: an increment of this many bytes or more goes to Spark under ``auto`` (the default of the
#: setting ``catalog_spark_threshold_bytes``, 4 GiB). Measured on the 2-core reference machine
#: (docs/performance.md, "Catalog build: which engine"): ``catalog build --engine spark`` pays
#: ~10-13 s before any work (JVM, Python workers, first job) where ``--engine in-process`` pays
#: ~2 s in all; in-process extraction (batch headers, compiled CRCs) runs at ~0.45-0.7 GB/s from
#: S3 and several GB/s from a local store, so 4 GiB is at most ~6-9 s of in-process work: less
#: than Spark's start-up. Below it Spark cannot win, even with many executors.
DEFAULT_SPARK_THRESHOLD_BYTES: Final = CATALOG_SPARK_THRESHOLD_BYTES
#: ... or this many segments (``catalog_spark_threshold_segments``, 1000): each costs ~8 ms
#: in-process from S3 (requests, not bytes: moto, 1 MiB segments), so 1000 small segments are
#: ~8 s of work, again Spark's start-up, and executors can share them.
DEFAULT_SPARK_THRESHOLD_SEGMENTS: Final = CATALOG_SPARK_THRESHOLD_SEGMENTS


@dataclass(frozen=True, slots=True)
class Increment:
    """What a build has to extract: the segments not cataloged yet and their bytes (the sizes
    their manifests give)."""

    segments: int
    bytes: int

    def describe(self) -> str:
        return f"{self.segments} segment(s), {format_bytes(self.bytes)} new"


@dataclass(frozen=True, slots=True)
class EngineChoice:
    """The engine a build runs on and why, in words for the build report."""

    engine: Engine
    reason: str
    increment: Increment | None = None


#: given the increment, the runner to extract it with and the choice it stands for
RunnerSelector = Callable[[Increment], "tuple[TaskRunner, EngineChoice]"]


def choose_engine(
    requested: str,
    increment: Increment,
    *,
    threshold_bytes: int = DEFAULT_SPARK_THRESHOLD_BYTES,
    threshold_segments: int = DEFAULT_SPARK_THRESHOLD_SEGMENTS,
) -> EngineChoice:
    """The engine for ``increment``: ``requested`` itself unless it is ``auto``, then Spark
    when the increment reaches ``threshold_bytes`` or ``threshold_segments``.

    Raises:
        ValueError: ``requested`` is not one of :data:`ENGINES`.
    """
    if requested not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {requested!r}")
    what = increment.describe()
    if requested != "auto":
        engine: Engine = "spark" if requested == "spark" else "in-process"
        return EngineChoice(engine, f"{what}, engine {requested} asked for", increment)
    if increment.segments == 0:
        return EngineChoice("in-process", "nothing new to extract", increment)
    limit = (
        f"the Spark threshold ({format_bytes(threshold_bytes)} or {threshold_segments} segments)"
    )
    if increment.bytes >= threshold_bytes or increment.segments >= threshold_segments:
        return EngineChoice("spark", f"{what}, at or above {limit}", increment)
    return EngineChoice("in-process", f"{what}, below {limit}", increment)
