"""Catalog builds as a service: where the extraction runs, and the build's lifecycle.

:class:`CatalogBuildService` opens the catalog (creating it: the build owns it) and names the
store from the settings, picks the task runner, and runs
:func:`~kafka_archive.catalog.build.build_catalog`. The runner follows the engine
(``catalog_engine`` setting, or ``engine=``): ``auto`` lets the build list its increment first
and runs it in this process (threads) unless it reaches the Spark threshold
(:mod:`kafka_archive.catalog.build.engine`), ``in-process`` always does, ``spark`` always starts
a Spark session (``local[*]`` or the ``spark_master`` setting). Spark is imported and started
only when chosen; a session the service started (not one already active in the process) is
stopped when it closes. The CLI's ``catalog build``, the Airflow catalog task and
``spark_jobs/build_catalog.py`` all go through it; a build on a remote cluster is
``spark-submit`` of that job (:mod:`kafka_archive.airflow.catalog_tasks`).

Builds are idempotent (a re-run adds nothing, a killed run is completed by the next), so
callers retry freely. Errors: :class:`~kafka_archive.settings.SettingsError`, the catalog's and
the store's typed errors, and :class:`SparkStartFailed` (Spark was chosen and did not start).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.services.resources import ResourceService
from kafka_archive.settings import Settings

if TYPE_CHECKING:
    from kafka_archive.catalog.build import (
        BuildReport,
        EngineChoice,
        Increment,
        ProgressFn,
        TaskRunner,
    )
    from kafka_archive.catalog.db import Catalog
    from kafka_archive.spark.session import SparkRunner

__all__ = ["BuildFailed", "CatalogBuildService", "SparkStartFailed", "raise_for_failures"]

#: threads of the in-process engine (extraction releases the GIL in its compiled CRC and
#: header scans; the store's reads overlap)
IN_PROCESS_THREADS = 4


class SparkStartFailed(KafkaArchiveError, RuntimeError):
    """The build chose (or was told to use) Spark and Spark did not start (no Java, an
    unreachable master, pyspark missing): the message is Spark's first line."""

    default_hint = (
        "check the Spark master URL and that Java is installed, or run without Spark: "
        "--engine in-process (setting catalog_engine)"
    )


class BuildFailed(KafkaArchiveError, RuntimeError):
    """A build finished with failed segments or refused manifests (recorded in the catalog;
    ``catalog gaps`` shows them): never a silent success. ``report`` is the build's JSON."""

    def __init__(self, message: str, report: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.report = dict(report or {})


def raise_for_failures(report: Mapping[str, Any], what: str) -> None:
    """Raise :class:`BuildFailed` when ``report`` (a build's JSON) lists failed segments (the
    next run retries them) or refused manifests (recorded, shown by ``catalog gaps``)."""
    failed, refused = int(report.get("failed") or 0), int(report.get("problems") or 0)
    if failed or refused:
        keys = [str(f.get("manifest_key")) for f in report.get("failures") or []]
        keys += [f"{p['manifest_key']} ({p['kind']})" for p in report.get("problem_list") or []]
        raise BuildFailed(
            f"{what}: {failed} segment(s) failed, {refused} manifest(s) refused: "
            + ", ".join(keys[:10])
            + (f" and {len(keys) - 10} more" if len(keys) > 10 else ""),
            report,
        )


class CatalogBuildService(ResourceService):
    """Builds of the catalog the settings name (see the module docstring)."""

    def __init__(self, settings: Settings | None = None, *, catalog: Catalog | None = None):
        super().__init__(settings, catalog=catalog)
        #: Spark sessions this service started for builds (stopped by :meth:`close`; not one
        #: that was already active in the process)
        self._started: list[SparkRunner] = []

    def close(self) -> None:
        for runner in self._started:
            runner.spark.stop()
        self._started.clear()
        super().close()

    def spark_runner(
        self, master: str | None = None, conf: Mapping[str, str] | None = None
    ) -> SparkRunner:
        """A runner on a Spark session for ``master`` (default: the ``spark_master`` setting;
        neither: the master ``spark-submit`` configured, else ``local[*]``). Stop its session
        with ``runner.spark.stop()`` when done."""
        from kafka_archive.spark.session import SparkRunner, make_spark_session

        master = master or self.resources.settings.spark_master
        return SparkRunner(make_spark_session(master, conf=dict(conf or {})))

    def build(
        self,
        *,
        runner: TaskRunner | None = None,
        engine: str | None = None,
        spark_master: str | None = None,
        spark_conf: Mapping[str, str] | None = None,
        on_engine: Callable[[EngineChoice], None] | None = None,
        cluster: str | None = None,
        interval_bytes: int | None = None,
        verify: str | None = None,
        store_options: Mapping[str, Any] | None = None,
        progress: ProgressFn | None = None,
    ) -> BuildReport:
        """Catalog every archived segment not cataloged yet.

        ``runner``: extract with this runner (the caller's choice). Otherwise ``engine``
        (default: the ``catalog_engine`` setting; ``auto``, ``in-process`` or ``spark``)
        decides once the increment is listed; Spark runs on ``spark_master`` (default: the
        setting; see :meth:`spark_runner`) with ``spark_conf``. ``on_engine`` is told the
        choice before the runner starts. ``verify`` defaults to the ``catalog_verify``
        setting. The report's ``engine`` / ``engine_reason`` say what ran and why.

        Raises:
            SparkStartFailed: Spark was chosen and did not start.
        """
        from kafka_archive.catalog.build import build_catalog
        from kafka_archive.catalog.extract import DEFAULT_INTERVAL_BYTES

        def select(increment: Increment) -> tuple[TaskRunner, EngineChoice]:
            return self._runner_for(increment, engine, spark_master, spark_conf, on_engine)

        report = build_catalog(
            self.resources.catalog(create=True),
            self.resources.require("store"),
            cluster=cluster,
            runner=runner,
            select_runner=None if runner is not None else select,
            store_options=store_options,
            interval_bytes=interval_bytes or DEFAULT_INTERVAL_BYTES,
            verify=verify or self.resources.settings.catalog_verify,
            progress=progress,
        )
        self._build_metadata_history(report, cluster, store_options)
        return report

    def _runner_for(
        self,
        increment: Increment,
        engine: str | None,
        master: str | None,
        conf: Mapping[str, str] | None,
        on_engine: Callable[[EngineChoice], None] | None,
    ) -> tuple[TaskRunner, EngineChoice]:
        """The engine for ``increment`` (:func:`~kafka_archive.catalog.build.choose_engine`
        with the settings' thresholds) and its runner; Spark is imported only if chosen."""
        from kafka_archive.catalog.build import InProcessRunner, choose_engine

        settings = self.resources.settings
        choice = choose_engine(
            engine or settings.catalog_engine,
            increment,
            threshold_bytes=settings.catalog_spark_threshold_bytes,
            threshold_segments=settings.catalog_spark_threshold_segments,
        )
        if on_engine is not None:
            on_engine(choice)
        if choice.engine == "in-process":
            return InProcessRunner(threads=IN_PROCESS_THREADS), choice
        from kafka_archive.spark.session import active_session

        # a session this process already had (getOrCreate returns it) stays its owner's
        owned = active_session() is None
        try:
            started = self.spark_runner(master, conf)
        except Exception as exc:  # Py4J/JVM start-up errors are untyped; one line of them
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
            where = master or settings.spark_master or "local[*]"
            raise SparkStartFailed(f"cannot start Spark with master {where!r}: {first}") from None
        if owned:
            self._started.append(started)
        return started, choice

    def _build_metadata_history(
        self, report: BuildReport, cluster: str | None, store_options: Mapping[str, Any] | None
    ) -> None:
        """Bring the metadata history of ``cluster`` (default: every cluster the catalog
        holds) up to its archived ``__cluster_metadata`` log; a cluster whose history cannot
        be built is a failure of the build (``failed``), never silent."""
        from sqlalchemy import select

        from kafka_archive.catalog.models import Partition
        from kafka_archive.services.metadata_history import MetadataHistoryService

        catalog = self.resources.catalog()
        if cluster is not None:
            clusters = [cluster]
        else:
            with catalog.session() as s:
                clusters = list(s.execute(select(Partition.cluster).distinct()).scalars())
        # borrows this service's catalog and store (closed with this service, not with it)
        history = MetadataHistoryService(
            self.resources.settings,
            catalog=catalog,
            store=self.resources.store(**dict(store_options or {})),
        )
        for name in sorted(clusters):
            try:
                built = history.build_archived([name])
            except Exception as exc:  # damaged archived metadata, a conflicting source ...
                from kafka_archive.redact import redact_text

                report.failed.append(
                    {
                        "manifest_key": f"{name}/__cluster_metadata (metadata history)",
                        "detail": redact_text(exc),
                    }
                )
                continue
            report.metadata_history += [r.to_json() for r in built]
            self._record_damaged_metadata(report, name, [d for r in built for d in r.damaged])

    def _record_damaged_metadata(
        self, report: BuildReport, cluster: str, damaged: list[dict[str, Any]]
    ) -> None:
        """The metadata objects the history build skipped as damaged, as integrity problems
        (``corrupt``, detected by ``metadata-history``): in the build's ``problems`` and in
        ``integrity_problems``, shown by ``catalog gaps`` like any refused object."""
        from kafka_archive.archive.discovery import METADATA_TOPIC
        from kafka_archive.catalog.problems import Problem, record_problems

        problems = [
            Problem(
                "corrupt",
                str(d["key"]),
                f"metadata history: {d['kind']} skipped, offsets {d['first_offset']}.."
                f"{d['last_offset']} not read from it: {d['reason']}",
                str(d["key"]),
                cluster,
                METADATA_TOPIC,
                0,
                int(d["first_offset"]),
                int(d["last_offset"]),
                d["position"],
            )
            for d in damaged
        ]
        if not problems:
            return
        with self.resources.catalog().session() as s:
            record_problems(s, problems, "metadata-history")
            s.commit()
        report.problems += [p.to_json() for p in problems]
