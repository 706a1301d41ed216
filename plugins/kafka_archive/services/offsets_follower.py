"""Following ``__consumer_offsets`` as a service: every group commit into the catalog, live.

:class:`OffsetsFollowerService` owns what the offsets follower needs around
:func:`kafka_archive.offsets_follower.loop.follow_offsets`: the catalog the settings name
(created on first use: the follower may be its first writer), a probe of the cluster *before*
that catalog is created (a mistyped address creates nothing), and the loop over the clusters
of one scheduled run. ``kafka-archive catalog follow-offsets`` and the ``kafka_archive_offsets``
DAG's task both go through it.

Guarantees are the follower's: every commit stored exactly once, a run killed at any point
resumed from the positions stored with the rows. Errors: ``ClusterUnreachable`` (and
librdkafka's ``KafkaException`` for a refused setting) from :meth:`probe`; the catalog's typed
errors; :class:`~kafka_archive.settings.SettingsError` when no catalog is given.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from kafka_archive.services.resources import ResourceService

if TYPE_CHECKING:
    from kafka_archive.offsets_follower.follower import BatchResult, FollowReport

__all__ = ["FollowTarget", "OffsetsFollowerService"]

#: (cluster name, bootstrap servers, librdkafka consumer settings) of one followed cluster
FollowTarget = tuple[str, str, Mapping[str, str]]


class OffsetsFollowerService(ResourceService):
    """The offsets follower over the catalog the settings name (see the module docstring)."""

    def probe(self, bootstrap: str, config: Mapping[str, str] | None = None) -> None:
        """Return once the cluster at ``bootstrap`` answers; call it before :meth:`follow` so
        that a wrong address creates no catalog."""
        from kafka_archive.offsets_follower.follower import probe_cluster

        probe_cluster(bootstrap, config)

    def follow(
        self,
        cluster: str,
        bootstrap: str,
        *,
        until_caught_up: bool = False,
        duration_s: float | None = None,
        config: Mapping[str, str] | None = None,
        stop: threading.Event | None = None,
        handle_signals: bool = False,
        on_batch: Callable[[BatchResult], None] | None = None,
    ) -> FollowReport:
        """Follow one cluster's ``__consumer_offsets`` into the catalog (created if missing)
        until caught up, ``duration_s`` passed, ``stop`` is set or (``handle_signals``)
        SIGTERM/SIGINT arrives; ``on_batch`` sees each stored batch (e.g. metrics)."""
        from kafka_archive.offsets_follower.loop import follow_offsets

        return follow_offsets(
            self.resources.catalog(create=True),
            cluster,
            bootstrap,
            until_caught_up=until_caught_up,
            duration_s=duration_s,
            config=config,
            stop=stop,
            handle_signals=handle_signals,
            on_batch=on_batch,
        )

    def follow_each(
        self,
        targets: Sequence[FollowTarget],
        *,
        max_seconds: float,
        log: Callable[[str], None] = lambda _m: None,
    ) -> list[FollowReport]:
        """One scheduled run: every cluster of ``targets`` followed until caught up, at most
        ``max_seconds`` each, in turn (a cluster that falls behind does not starve the
        others); ``log`` gets one line per cluster. The reports, in ``targets`` order."""
        reports = []
        for cluster, bootstrap, config in targets:
            report = self.follow(
                cluster, bootstrap, until_caught_up=True, duration_s=max_seconds, config=config
            )
            log(
                f"{cluster}: {report.records_read} record(s), {report.commits_recorded} "
                f"commit(s) in {report.seconds}s; {report.stopped_by}"
            )
            if report.behind_log_start:
                log(f"{cluster}: records deleted before they were read: {report.behind_log_start}")
            reports.append(report)
        return reports
