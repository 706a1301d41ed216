"""Archiving as a service: one broker's rolled segments into the store, whole or step by step.

:class:`ArchiveService` owns what the CLI's ``archive`` command and the archive DAG's tasks
share: which store a cluster archives to (the ``store`` setting, a cluster's own ``store_uri``
in the archive configuration winning for that cluster), the worker's digest and manifest cache
(the ``state_dir`` setting), and the steps themselves:

* :meth:`ArchiveService.archive_broker` - discover, plan and upload in one call (the CLI);
* :meth:`ArchiveService.archive_fetch` - the fetch archiver (``archive fetch``): a cluster's
  partitions fetched over the Kafka protocol into segments, for clusters whose disks we cannot
  read;
* :meth:`ArchiveService.discover`, :meth:`ArchiveService.plan`, :meth:`ArchiveService.upload` -
  the same steps one at a time, for the DAG, which runs discovery and upload on the worker that
  sees each log dir and plans in between.

Every step is idempotent (manifests already in the store are consulted), so a failed upload,
crash or store outage is resumed by running again. Errors: :class:`~kafka_archive.settings.
SettingsError`, :class:`~kafka_archive.store.StoreError` (the store), ``OSError`` (a log dir);
per-segment problems are outcomes in the report, not exceptions.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kafka_archive.settings import Settings, load_settings

if TYPE_CHECKING:
    from kafka_archive.archive.config import ArchiveConfig, ArchiveTarget
    from kafka_archive.archive.discovery import LogDirDiscovery
    from kafka_archive.archive.fetch.report import FetchReport
    from kafka_archive.archive.fetch.runner import FetchOptions
    from kafka_archive.archive.metadata_snapshots import MetadataFilesResult
    from kafka_archive.archive.planner import ArchivePlan, LogDirPlan
    from kafka_archive.archive.report import ArchiveReport, SegmentOutcome
    from kafka_archive.archive.runner import Progress
    from kafka_archive.store.base import ObjectStore

__all__ = ["ArchiveService"]


class ArchiveService:
    """Archiving with the settings (and, for the DAG, the archive configuration) given."""

    def __init__(self, settings: Settings | None = None, config: ArchiveConfig | None = None):
        """``config``: the archive configuration (clusters, brokers, store options); its
        ``store_uri`` and ``state_dir`` count as configuration-level values of the settings
        of the same name (the environment wins over them)."""
        self.config = config
        self.settings = settings if settings is not None else self._settings_for(config)

    @staticmethod
    def _settings_for(config: ArchiveConfig | None) -> Settings:
        if config is None:
            return load_settings()
        return load_settings(
            job_variable={"store_uri": config.store_uri, "state_dir": config.state_dir}
        )

    # -- where things are -------------------------------------------------------------------

    @property
    def state_dir(self) -> str:
        """The digest and manifest cache of this worker: the ``state_dir`` setting, else
        ``$XDG_CACHE_HOME/kafka-archive`` (default ``~/.cache/kafka-archive``). Losing it
        only costs re-hashing once."""
        if self.settings.state_dir:
            return self.settings.state_dir
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(cache, "kafka-archive")

    def store_uri(self, cluster: str | None = None) -> str:
        """The store ``cluster`` archives to: its own ``store_uri`` in the configuration, else
        the ``store`` setting."""
        if cluster is not None and self.config is not None:
            own = self.config.cluster(cluster).store_uri
            if own:
                return own
        if not self.settings.store:
            from kafka_archive.services.resources import MissingSetting

            raise MissingSetting("store")
        return self.settings.store

    def open_store(self, cluster: str | None = None, **options: Any) -> ObjectStore:
        """The store of ``cluster`` with the configuration's store options (or ``options``)."""
        from kafka_archive.store import open_store

        opts = dict(self.config.store_options) if self.config is not None else {}
        opts.update(options)
        return open_store(self.store_uri(cluster), **opts)

    # -- the whole run (CLI) ----------------------------------------------------------------

    def archive_broker(
        self,
        *,
        cluster: str,
        broker_id: int,
        log_dirs: Sequence[str],
        store: ObjectStore,
        dry_run: bool = False,
        concurrency: int = 4,
        progress: Progress | None = None,
        topics: Sequence[str] = (),
    ) -> ArchiveReport:
        """Archive the rolled segments of one broker's log dirs into ``store`` (see
        :func:`kafka_archive.archive.runner.run_archive`; ``topics``: glob patterns, empty for
        every topic). Digests and manifests are cached
        only in a ``state_dir`` the settings name (a one-off run keeps nothing behind)."""
        from kafka_archive.archive.runner import run_archive

        return run_archive(
            cluster=cluster,
            broker_id=broker_id,
            log_dirs=log_dirs,
            store=store,
            dry_run=dry_run,
            concurrency=concurrency,
            state_dir=self.settings.state_dir,
            progress=progress,
            topics=topics,
        )

    # -- the steps (DAG) --------------------------------------------------------------------

    def discover(self, target: ArchiveTarget) -> LogDirDiscovery:
        """Discover one log dir (on the worker that can see it)."""
        from kafka_archive.archive.digests import DigestCache
        from kafka_archive.archive.discovery import discover_log_dir

        with DigestCache(self.state_dir) as digests:
            return discover_log_dir(
                target.cluster,
                target.broker_id,
                target.log_dir,
                digests=digests,
                topics=target.topics,
            )

    def plan(self, discoveries: Mapping[str, Sequence[LogDirDiscovery]]) -> list[ArchivePlan]:
        """Plan every cluster from its log dirs' discoveries (``{cluster: [discovery]}``)."""
        from kafka_archive.archive.manifest_cache import ManifestCache
        from kafka_archive.archive.planner import plan_cluster

        plans: list[ArchivePlan] = []
        cache = ManifestCache(self.state_dir)
        try:
            for cluster, found in sorted(discoveries.items()):
                store = self.open_store(cluster)
                try:
                    plans.append(plan_cluster(cluster, list(found), store, cache=cache))
                finally:
                    store.close()
        finally:
            cache.close()
        return plans

    def archive_metadata_files(
        self, target: ArchiveTarget, *, dry_run: bool = False
    ) -> MetadataFilesResult:
        """Archive the KRaft metadata snapshots and quorum-state of one log dir (nothing when
        it holds no ``__cluster_metadata-0``), on the worker that can see it."""
        from pathlib import Path

        from kafka_archive.archive.metadata_snapshots import (
            MetadataFilesResult,
            archive_metadata_files,
        )

        if not (Path(target.log_dir) / "__cluster_metadata-0").is_dir():
            return MetadataFilesResult()  # the common case: no store connection for nothing
        store = self.open_store(target.cluster)
        try:
            return archive_metadata_files(
                store, target.cluster, target.broker_id, target.log_dir, dry_run=dry_run
            )
        finally:
            store.close()

    def upload(
        self, target: ArchiveTarget, plan: LogDirPlan, *, dry_run: bool = False
    ) -> list[SegmentOutcome]:
        """Upload one log dir's planned segments (on the worker that can see it)."""
        from kafka_archive.archive.uploader import archive_log_dir

        if not plan.tasks:
            return []
        concurrency = self.config.concurrency if self.config is not None else 4
        store = self.open_store(target.cluster)
        try:
            return archive_log_dir(store, plan, dry_run=dry_run, concurrency=concurrency)
        finally:
            store.close()

    # -- over the Kafka protocol (archive fetch) ----------------------------------------------

    def archive_fetch(
        self,
        *,
        cluster: str,
        bootstrap: str,
        store: ObjectStore,
        config: Mapping[str, str] | None = None,
        options: FetchOptions | None = None,
        stop: threading.Event | None = None,
    ) -> FetchReport:
        """Archive a cluster's partitions by fetching them over the Kafka protocol (see
        :func:`kafka_archive.archive.fetch.runner.run_fetch_archive`); ``config``: librdkafka
        client settings (security), ``bootstrap`` wins over a ``bootstrap.servers`` in it.
        With ``options.group`` the partitions are shared with the group's other members
        (:mod:`kafka_archive.archive.fetch.group`).

        Raises: as ``run_fetch_archive``, and
        :class:`~kafka_archive.kafka_protocol.config.UnsupportedRawSetting` for a setting the
        protocol client cannot apply.
        """
        from kafka_archive.archive.fetch.group import GroupMembership
        from kafka_archive.archive.fetch.runner import FetchOptions, run_fetch_archive
        from kafka_archive.archive.fetch.source import KafkaFetchSource

        options = options or FetchOptions()
        conf = {**(config or {}), "bootstrap.servers": bootstrap}
        source = KafkaFetchSource(conf)
        membership = (
            GroupMembership(
                conf, options.group, session_timeout_ms=options.group_session_timeout_ms
            )
            if options.group
            else None
        )
        try:
            return run_fetch_archive(
                cluster=cluster,
                source=source,
                store=store,
                options=options,
                stop=stop,
                membership=membership,
            )
        finally:
            source.close()
