"""What the ``kafka_archive_prune`` DAG's task does, without Airflow (tests call it directly).

The task applies the retention policies (the ``retention`` setting: Airflow Variable
``kafka_archive_retention`` as JSON, ``KAFKA_ARCHIVE_RETENTION``, or ``retention`` in the
configuration file) to the archive and the catalog the settings name, through
:class:`kafka_archive.services.prune.PruneService`. Retries are always safe: a prune killed
at any point is finished by the next run (see :mod:`kafka_archive.catalog.prune`).

A run whose plan deletes more than the ``prune_max_share`` setting (default 50%) of any topic
deletes nothing and fails with :class:`~kafka_archive.catalog.prune_share.PruneNeedsConfirmation`
(its message names the topics and shares) unless triggered with the Param ``yes: true`` (or the
setting raised): a scheduled run never prunes past the guard on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafka_archive.catalog.prune_share import PruneNeedsConfirmation
from kafka_archive.settings import VariableReader, load_settings

# PruneNeedsConfirmation: the refusal the DAG fails at once on (a retry would refuse again)
__all__ = ["PruneNeedsConfirmation", "prune_in_task", "run_prune_task"]


def prune_in_task(
    variables: VariableReader | None = None,
    *,
    dry_run: bool = False,
    cluster: str | None = None,
    topic: str | None = None,
    env: Mapping[str, str] | None = None,
    log: Callable[[str], None] = lambda _m: None,
    yes: bool = False,
) -> dict[str, Any]:
    """The prune task's body: the settings as a task reads them (``variables``: Airflow's
    Variables, default the running task's), then one prune; returns its summary (JSON-able).

    Raises:
        RetentionConfigError: invalid policies; SettingsError: no catalog or store;
        PruneNeedsConfirmation: above ``prune_max_share`` and not ``yes`` (nothing deleted);
        the store's and the catalog's typed errors (the next run finishes the prune).
    """
    from kafka_archive.services.prune import PruneService

    if variables is None:
        from kafka_archive.airflow.store_connection import use_store_connection
        from kafka_archive.settings import airflow_variable_reader

        use_store_connection()
        variables = airflow_variable_reader()
    settings = load_settings(env=env, variables=variables)
    return run_prune_task(
        PruneService(settings), dry_run=dry_run, cluster=cluster, topic=topic, log=log, yes=yes
    )


def run_prune_task(
    service: Any,
    *,
    dry_run: bool,
    cluster: str | None,
    topic: str | None,
    log: Callable[[str], None],
    yes: bool = False,
) -> dict[str, Any]:
    """One prune with ``service`` (closed afterwards), logged one line per range."""
    with service:
        try:
            report = service.prune(cluster=cluster, topic=topic, dry_run=dry_run, confirmed=yes)
        except PruneNeedsConfirmation as exc:
            log(f"refused: {exc}; {exc.hint}")
            raise
    for c in report.completed:
        log(f"finished an earlier prune of {c['cluster']}/{c['topic']}/{c['partition']}")
    verb = "would prune" if dry_run else "pruned"
    for r in report.ranges:
        log(
            f"{verb} {r.cluster}/{r.topic}/{r.partition} offsets {r.first_offset}.."
            f"{r.last_offset}: {len(r.segment_ids)} segment(s), {r.bytes} bytes "
            f"(policy {r.policy})"
        )
    for sh in report.shares:
        log(
            f"{verb} {sh.percent:.1f}% of {sh.cluster}/{sh.topic} ({sh.pruned_bytes} of "
            f"{sh.total_bytes} bytes, policy {sh.policy})"
        )
    for sh in report.needs_confirmation:
        log(f"{sh.cluster}/{sh.topic}: above prune_max_share, a real run needs the Param yes")
    for k in report.kept_internal:
        log(f"kept {k['cluster']}/{k['topic']}: {k['reason']}")
    for h in report.held:
        log(
            f"kept {h['cluster']}/{h['topic']}/{h['partition']} from {h['first_offset']}: "
            f"{h['reason']}"
        )
    out: dict[str, Any] = report.to_json()
    return {k: v for k, v in out.items() if k != "ranges"} | {
        "ranges": [r.to_json() for r in report.ranges]
    }
