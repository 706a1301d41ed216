"""Catalog builds as a service: where the extraction runs, and the build's lifecycle.

:class:`CatalogBuildService` opens the catalog (creating it: the build owns it) and names the
store from the settings, picks the task runner (threads in this process, or a Spark session:
``local[*]`` in-process or a cluster master), and runs
:func:`~kafka_archive.catalog.build.build_catalog`. The CLI's ``catalog build``, the Airflow
catalog task (local mode) and ``spark_jobs/build_catalog.py`` all go through it; a build on a
remote cluster is ``spark-submit`` of that job (:mod:`kafka_archive.spark.submit`).

Builds are idempotent (a re-run adds nothing, a killed run is completed by the next), so
callers retry freely. Errors: :class:`~kafka_archive.settings.SettingsError`, the catalog's and
the store's typed errors, and (starting Spark) whatever pyspark raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.services.resources import ResourceService
from kafka_archive.settings import Settings

if TYPE_CHECKING:
    from kafka_archive.catalog.build import BuildReport, ProgressFn, TaskRunner
    from kafka_archive.catalog.db import Catalog
    from kafka_archive.spark.session import SparkRunner

__all__ = ["BuildFailed", "CatalogBuildService", "raise_for_failures"]


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
        cluster: str | None = None,
        interval_bytes: int | None = None,
        verify: str | None = None,
        store_options: Mapping[str, Any] | None = None,
        progress: ProgressFn | None = None,
    ) -> BuildReport:
        """Catalog every archived segment not cataloged yet; ``runner`` defaults to threads in
        this process, ``verify`` to the ``catalog_verify`` setting."""
        from kafka_archive.catalog.build import InProcessRunner, build_catalog
        from kafka_archive.catalog.extract import DEFAULT_INTERVAL_BYTES

        report = build_catalog(
            self.resources.catalog(create=True),
            self.resources.require("store"),
            cluster=cluster,
            runner=runner or InProcessRunner(threads=4),
            store_options=store_options,
            interval_bytes=interval_bytes or DEFAULT_INTERVAL_BYTES,
            verify=verify or self.resources.settings.catalog_verify,
            progress=progress,
        )
        self._build_metadata_history(report, cluster, store_options)
        return report

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
