"""Retention as a service: the policies from the settings, applied to the archive by prune.

:class:`PruneService` reads the ``retention`` setting (validated by
:func:`kafka_archive.catalog.retention.load_policies`), opens the catalog and the store the
settings name, and runs :func:`kafka_archive.catalog.prune.prune`. ``kafka-archive archive
prune`` and the ``kafka_archive_prune`` DAG's task both go through it.

A prune is safe to re-run and to run after a crash (the next run finishes what a dead one
recorded); it never deletes objects a live lease needs (:mod:`kafka_archive.catalog.leases`).
A plan that deletes more than the ``prune_max_share`` setting (a percentage, default 50) of
any topic deletes nothing until confirmed (``confirmed``: ``--yes``, the DAG's Param ``yes``).
Errors: :class:`~kafka_archive.catalog.retention.RetentionConfigError` (bad policies),
:class:`~kafka_archive.catalog.prune_share.PruneNeedsConfirmation` (above the share),
:class:`~kafka_archive.settings.SettingsError` (no catalog or store given), the catalog's and
the store's typed errors.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_archive.services.resources import ResourceService

if TYPE_CHECKING:
    from kafka_archive.catalog.prune import EventFn, PruneReport
    from kafka_archive.catalog.retention import RetentionPolicy

__all__ = ["PruneService"]


class PruneService(ResourceService):
    """Prunes of the archive the settings name (see the module docstring)."""

    def policies(self) -> list[RetentionPolicy]:
        """The ``retention`` setting's policies (empty: keep everything)."""
        from kafka_archive.catalog.retention import load_policies

        return load_policies(self.resources.settings.retention)

    def prune(
        self,
        *,
        cluster: str | None = None,
        topic: str | None = None,
        dry_run: bool = False,
        now_ms: int | None = None,
        on_event: EventFn | None = None,
        confirmed: bool = False,
    ) -> PruneReport:
        """Apply the policies (``cluster``/``topic``: only those); ``dry_run`` changes
        nothing and reports what would go and how many bytes, and each topic's share.

        Unless ``confirmed`` (``--yes``), a plan deleting more than the ``prune_max_share``
        setting of any topic deletes nothing and raises
        :class:`~kafka_archive.catalog.prune_share.PruneNeedsConfirmation`."""
        from kafka_archive.catalog.prune import prune

        policies = self.policies()
        return prune(
            self.resources.catalog(),
            self.resources.store(),
            policies,
            cluster=cluster,
            topic=topic,
            dry_run=dry_run,
            now_ms=now_ms,
            on_event=on_event,
            max_share=None if confirmed else self.resources.settings.prune_max_share,
        )
