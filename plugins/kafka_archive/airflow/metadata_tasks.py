"""What the ``kafka_archive_metadata_snapshot`` DAG's task does, without Airflow (tests call
it directly).

For each cluster of the ``metadata_snapshots`` setting (a list of ``{cluster, bootstrap,
client_config}``: Airflow Variable ``kafka_archive_metadata_snapshots`` as JSON,
``KAFKA_ARCHIVE_METADATA_SNAPSHOTS``, or ``metadata_snapshots`` in the configuration file) the
task snapshots topics, configs and ACLs through the Admin API into the metadata history
(:meth:`kafka_archive.services.metadata_history.MetadataHistoryService.snapshot_from_admin`).
Every cluster is tried; a cluster that fails fails the task after the others are done (a retry
snapshots again: a snapshot is one transaction, so nothing is half-written).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.settings import SettingsError, VariableReader, load_settings

__all__ = ["SnapshotTaskError", "metadata_snapshot_in_task", "snapshot_targets"]


class SnapshotTaskError(KafkaArchiveError, RuntimeError):
    """Some clusters could not be snapshotted (each named with its reason)."""


def snapshot_targets(raw: Any, only: str | None = None) -> list[tuple[str, dict[str, str]]]:
    """``(cluster, librdkafka config)`` of each entry of the ``metadata_snapshots`` setting
    (``only``: just that cluster); a malformed entry is a :class:`SettingsError` naming it."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SettingsError(
            "metadata_snapshots must be a list of {cluster, bootstrap, client_config}"
        )
    out = []
    for n, item in enumerate(raw):
        if not isinstance(item, Mapping) or not item.get("cluster") or not item.get("bootstrap"):
            raise SettingsError(
                f"metadata_snapshots[{n}] needs a cluster and a bootstrap",
                hint='e.g. [{"cluster": "legacy", "bootstrap": "kafka-1:9092"}]',
            )
        extra = item.get("client_config") or {}
        if not isinstance(extra, Mapping):
            raise SettingsError(f"metadata_snapshots[{n}].client_config must be an object")
        config = {str(k): str(v) for k, v in extra.items()}
        config["bootstrap.servers"] = str(item["bootstrap"])
        if only is None or item["cluster"] == only:
            out.append((str(item["cluster"]), config))
    return out


def metadata_snapshot_in_task(
    variables: VariableReader | None = None,
    *,
    cluster: str | None = None,
    env: Mapping[str, str] | None = None,
    log: Callable[[str], None] = lambda _m: None,
) -> list[dict[str, Any]]:
    """The task's body: the settings as a task reads them (``variables``: Airflow's Variables,
    default the running task's), then one snapshot per configured cluster; their summaries.

    Raises:
        SettingsError: no catalog, or a malformed ``metadata_snapshots``;
        SnapshotTaskError: a cluster could not be snapshotted (after trying every cluster).
    """
    from kafka_archive.services.metadata_history import MetadataHistoryService

    if variables is None:
        from kafka_archive.settings import airflow_variable_reader

        variables = airflow_variable_reader()
    settings = load_settings(env=env, variables=variables)
    targets = snapshot_targets(settings.metadata_snapshots, cluster)
    if not targets:
        log("no cluster to snapshot: set metadata_snapshots (see docs/metadata-history.md)")
    done, failed = [], []
    with MetadataHistoryService(settings) as svc:
        for name, config in targets:
            try:
                report = svc.snapshot_from_admin(name, config)
            except Exception as exc:  # Kafka's or the catalog's: report it, try the others
                from kafka_archive.redact import redact_text

                failed.append(f"{name}: {redact_text(exc)}")
                log(f"snapshot of {name} failed: {redact_text(exc)}")
                continue
            acl = "" if report.acls_available else " (ACLs unavailable: no authorizer)"
            log(f"snapshot of {name}: {report.changes} change(s){acl}")
            done.append(report.to_json())
    if failed:
        raise SnapshotTaskError("; ".join(failed))
    return done
