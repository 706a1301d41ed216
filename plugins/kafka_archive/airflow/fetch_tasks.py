"""What the ``kafka_archive_fetch`` DAG's task does, without Airflow (tests call it directly).

Configuration (:class:`FetchJobConfig`), from the Airflow Variable ``kafka_archive_fetch``
(JSON) when set, else the settings (environment over Airflow Variables over the file)::

    {"store": "s3://bucket/kafka",                    # or $KAFKA_ARCHIVE_STORE
     "clusters": [{"cluster": "prod",                 # or $KAFKA_ARCHIVE_FETCH_CLUSTER
                   "bootstrap": "kafka-1:9093",        # or $KAFKA_ARCHIVE_FETCH_BOOTSTRAP
                   "topics": ["orders-*"],             # or $KAFKA_ARCHIVE_FETCH_TOPICS
                   "client_config": {"security.protocol": "SASL_SSL",
                                     "sasl.mechanism": "SCRAM-SHA-512"},
                   "connection": "kafka_prod",         # Airflow connection: the secrets
                   "secret_env": {"ssl.key.password": "PROD_KEY_PASSWORD"},
                   "group": "kafka-archive-fetch-prod"}],  # optional: with workers > 1
     "max_seconds": 240,
     "workers": 1}                                     # fetch tasks sharing the partitions

Secrets are refused in the Variable (every viewer of Variables reads it): a secret-named key of
``client_config`` (:func:`kafka_archive.redact.is_secret_key`) fails the configuration with a
message naming the key, never its value. They come from an Airflow connection (``connection``:
its login/password become ``sasl.username``/``sasl.password``, its extra holds other settings,
its host the bootstrap servers when ``bootstrap`` is not given; as for the replay DAG's target,
:mod:`kafka_archive.airflow.kafka_connection`) or from the worker's environment (``secret_env``:
librdkafka setting -> the environment variable holding its value). ``client_config`` may also
force ``segment.bytes``, ``segment.ms``, ``index.interval.bytes``, ``segment.index.bytes`` as
``archive fetch -X`` does.

Each run archives every cluster **until caught up** (the high watermark each partition had
when the run asked it first; at most ``max_seconds`` per cluster), then uploads the open
segments (:meth:`kafka_archive.services.archive.ArchiveService.archive_fetch`). A run killed at
any point loses nothing and doubles nothing: progress is what the store holds.

``workers`` > 1: the DAG runs that many fetch tasks at once (mapped; on as many Airflow workers
as the executor gives), each archiving every cluster as a member of the cluster's Kafka
consumer group (``group``, default ``kafka-archive-fetch-<cluster>``; ``archive fetch --group``):
each partition is archived by one task, and the partitions of a task that dies go to the
others once its session times out (:mod:`kafka_archive.archive.fetch.group`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.frozen import FrozenModel
from kafka_archive.settings import SettingsError, VariableReader, env_var, load_settings

if TYPE_CHECKING:
    from kafka_archive.archive.fetch.report import FetchReport
    from kafka_archive.services.archive import ArchiveService

__all__ = [
    "CONFIG_VARIABLE",
    "FetchJobConfig",
    "FetchTaskError",
    "FetchedCluster",
    "cluster_client",
    "fetch_in_task",
    "fetch_workers_in_task",
    "load_fetch_config",
    "run_fetch",
]

CONFIG_VARIABLE = "kafka_archive_fetch"
STORE_ENV = env_var("store")
CLUSTER_ENV = env_var("fetch_cluster")
BOOTSTRAP_ENV = env_var("fetch_bootstrap")
SECRET_HINT = (
    "put secrets in an Airflow connection named by the cluster's 'connection' (login/password "
    "become sasl.username/sasl.password, its extra holds other settings) or in the worker's "
    "environment, named by 'secret_env' (setting -> variable); the Variable is readable by "
    "every viewer of Airflow's Variables"
)


class FetchTaskError(KafkaArchiveError, RuntimeError):
    """Some clusters were not archived up to their high watermarks (each named with why);
    what was archived is kept and the next run resumes from it."""


class FetchedCluster(FrozenModel):
    """One cluster the task archives over the Kafka protocol."""

    cluster: str
    #: bootstrap servers; unset: the host of ``connection``
    bootstrap: str | None = None
    #: globs of the topics (whole names, as ``archive fetch --topics``; a string: comma-separated,
    #: as the setting ``fetch_topics`` gives them); empty: every non-internal topic
    topics: list[str] = Field(default_factory=list)

    @field_validator("topics", mode="before")
    @classmethod
    def _split(cls, value: object) -> object:
        if value is None:
            return []
        if isinstance(value, str):
            return [p.strip() for p in value.split(",") if p.strip()]
        return value

    #: librdkafka settings without secrets (and the segment configs to force)
    client_config: dict[str, str] = Field(default_factory=dict)
    #: an Airflow connection id holding the secrets (and possibly the bootstrap servers)
    connection: str | None = None
    #: librdkafka setting -> the environment variable (of the worker) holding its value
    secret_env: dict[str, str] = Field(default_factory=dict)
    #: the Kafka consumer group the fetch tasks of this cluster share its partitions by (with
    #: ``workers`` > 1; default ``kafka-archive-fetch-<cluster>``); needs Read on the group
    group: str | None = Field(default=None, min_length=1)


class FetchJobConfig(FrozenModel):
    """Where the archive is, which clusters to archive, and how long one cluster may take."""

    store: str
    clusters: list[FetchedCluster]
    max_seconds: float = Field(default=240.0, gt=0)
    #: fetch tasks run at once, sharing every cluster's partitions through its group
    workers: int = Field(default=1, ge=1, le=64)

    def group_of(self, cluster: FetchedCluster) -> str | None:
        """The consumer group of ``cluster``'s fetch tasks (None: one task, no group)."""
        if cluster.group is not None:
            return cluster.group
        return f"kafka-archive-fetch-{cluster.cluster}" if self.workers > 1 else None


def load_fetch_config(
    raw: str | None,
    *,
    variables: VariableReader | None = None,
    env: Mapping[str, str] | None = None,
) -> FetchJobConfig:
    """The configuration from the Variable's JSON text (``raw``); the store (``store`` in it,
    or the ``store`` setting) and the single cluster of ``KAFKA_ARCHIVE_FETCH_CLUSTER`` /
    ``..._BOOTSTRAP`` / ``..._TOPICS`` follow the platform's precedence
    (:mod:`kafka_archive.settings`).

    Raises:
        SettingsError: nothing configured, a secret in ``client_config`` (the key named, never
            the value), or an invalid configuration.
    """
    from pydantic import ValidationError

    try:
        data: dict[str, Any] = json.loads(raw) if raw else {}
    except json.JSONDecodeError as exc:
        raise SettingsError(f"Variable {CONFIG_VARIABLE} is not JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"Variable {CONFIG_VARIABLE} must be a JSON object")
    _refuse_secrets(data.get("clusters"))
    job = {"store_uri": data.get("store")}
    settings = load_settings(env=env, variables=variables, job_variable=job)
    data["store"] = settings.store or ""
    if "clusters" not in data and settings.fetch_cluster and settings.fetch_bootstrap:
        data["clusters"] = [
            {
                "cluster": settings.fetch_cluster,
                "bootstrap": settings.fetch_bootstrap,
                "topics": settings.fetch_topics,
            }
        ]
    if not data["store"]:
        raise SettingsError(
            f"no archive store: set store in Variable {CONFIG_VARIABLE} or {STORE_ENV}"
        )
    if not data.get("clusters"):
        raise SettingsError(
            f"no cluster to archive: set clusters in Variable {CONFIG_VARIABLE} or "
            f"{CLUSTER_ENV} and {BOOTSTRAP_ENV}"
        )
    try:
        return FetchJobConfig.model_validate(data)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(str(x) for x in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise SettingsError(f"Variable {CONFIG_VARIABLE}: {where}") from None


def _refuse_secrets(clusters: Any) -> None:
    """A secret-named key in any ``clusters[i].client_config`` is refused (named, never its
    value); anything malformed is left to the model's validation."""
    from kafka_archive.redact import is_secret_key

    if not isinstance(clusters, list):
        return
    found = [
        f"clusters[{n}].client_config.{key}"
        for n, item in enumerate(clusters)
        if isinstance(item, Mapping) and isinstance(item.get("client_config"), Mapping)
        for key in item["client_config"]
        if is_secret_key(str(key))
    ]
    if found:
        raise SettingsError(
            f"secret settings are refused in Variable {CONFIG_VARIABLE}: {', '.join(found)}",
            hint=SECRET_HINT,
        )


def cluster_client(
    cluster: FetchedCluster,
    *,
    connection_getter: Callable[[str], Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[str, dict[str, str]]:
    """``(bootstrap servers, client settings)`` of ``cluster``: its ``client_config`` over its
    connection's settings, then the secrets of ``secret_env`` from ``env``.

    Raises:
        SettingsError: the connection cannot be read, a ``secret_env`` variable is unset, or
            no bootstrap servers (each named; no value ever shown).
    """
    env = os.environ if env is None else env
    servers, config = "", dict(cluster.client_config)
    if cluster.connection:
        if connection_getter is None:
            raise SettingsError(f"{cluster.cluster}: connections are read inside Airflow only")
        try:
            conn = connection_getter(cluster.connection)
        except Exception as exc:  # Airflow's "not found", or its secrets backend failing
            raise SettingsError(
                f"{cluster.cluster}: cannot read Airflow connection {cluster.connection!r} "
                f"({type(exc).__name__})"
            ) from None
        from kafka_archive.airflow.kafka_connection import connection_client_settings

        servers, config = connection_client_settings(conn, cluster.client_config)
    for setting, variable in cluster.secret_env.items():
        value = env.get(variable)
        if not value:
            raise SettingsError(
                f"{cluster.cluster}: {setting} comes from the environment variable "
                f"{variable}, which is not set on this worker"
            )
        config[setting] = value
    bootstrap = cluster.bootstrap or servers
    if not bootstrap:
        raise SettingsError(f"{cluster.cluster}: no bootstrap servers (bootstrap or connection)")
    return bootstrap, config


def _task_config() -> FetchJobConfig:
    from airflow.sdk import Variable

    from kafka_archive.settings import airflow_variable_reader

    raw = Variable.get(CONFIG_VARIABLE, default=None)
    return load_fetch_config(raw, variables=airflow_variable_reader())


def fetch_workers_in_task() -> list[int]:
    """The numbers of the fetch tasks this run maps (``workers`` of the configuration)."""
    return list(range(_task_config().workers))


def fetch_in_task(log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The fetch task's body: the store's credentials and the configuration as a running task
    reads them, then :func:`run_fetch`."""
    from kafka_archive.airflow.kafka_connection import airflow_connection
    from kafka_archive.airflow.store_connection import use_store_connection

    use_store_connection()
    return run_fetch(_task_config(), log, connection_getter=airflow_connection)


def run_fetch(
    config: FetchJobConfig,
    log: Callable[[str], None] = lambda _m: None,
    *,
    connection_getter: Callable[[str], Any] | None = None,
    env: Mapping[str, str] | None = None,
    service: ArchiveService | None = None,
) -> list[dict[str, Any]]:
    """Archive every configured cluster until caught up; one small report (JSON-able) per
    cluster. Every cluster has its turn whatever the others do.

    Raises:
        FetchTaskError: a cluster failed, had a partition fail, or was not caught up within
            ``max_seconds`` (named with why, secrets redacted); what was archived is kept.
    """
    from kafka_archive.archive.fetch.runner import FetchOptions, split_segment_overrides
    from kafka_archive.redact import redact_text
    from kafka_archive.services.archive import ArchiveService
    from kafka_archive.settings import Settings

    service = service or ArchiveService(Settings(store=config.store))
    reports: list[dict[str, Any]] = []
    failed: list[str] = []
    store = service.open_store()
    try:
        for c in config.clusters:
            try:
                bootstrap, client = cluster_client(c, connection_getter=connection_getter, env=env)
                overrides, client = split_segment_overrides(client)
                options = FetchOptions(
                    topics=tuple(c.topics),
                    until_caught_up=True,
                    duration_s=config.max_seconds,
                    segment_overrides=overrides,
                    group=config.group_of(c),
                )
                report = service.archive_fetch(
                    cluster=c.cluster,
                    bootstrap=bootstrap,
                    store=store,
                    config=client,
                    options=options,
                )
            except Exception as exc:  # the cluster or the store: named, the others go on
                failed.append(f"{c.cluster}: {redact_text(exc)}")
                log(f"archiving {c.cluster} failed: {redact_text(exc)}")
                continue
            summary = _summary(report)
            reports.append(summary)
            log(
                f"{c.cluster}: {summary['segments']} segment(s), {summary['bytes_uploaded']} "
                f"bytes from {summary['partitions']} partition(s); stopped: {report.stopped_by}"
            )
            for h in summary["holes"]:
                log(
                    f"{c.cluster}: hole {h['topic']}-{h['partition']} offsets "
                    f"{h['start']}..{h['end'] - 1}: deleted by the broker before archived"
                )
            if summary["errors"]:
                failed.append(f"{c.cluster}: " + "; ".join(summary["errors"]))
            elif report.stopped_by != "caught_up":
                failed.append(
                    f"{c.cluster}: not caught up within {config.max_seconds:g}s (what was "
                    "fetched is uploaded; the next run continues)"
                )
    finally:
        store.close()
    if failed:
        raise FetchTaskError("; ".join(failed))
    return reports


def _summary(report: FetchReport) -> dict[str, Any]:
    """What XCom keeps of a run: counts, holes and errors (not every manifest key)."""
    return {
        "cluster": report.cluster,
        "ok": report.ok,
        "stopped_by": report.stopped_by,
        "partitions": len(report.partitions),
        "segments": report.segments,
        "bytes_uploaded": report.bytes_uploaded,
        "holes": [
            {"topic": h.topic, "partition": h.partition, "start": h.start, "end": h.end}
            for h in report.holes
        ],
        "errors": [f"{p.topic}-{p.partition}: {p.error}" for p in report.partitions if p.error],
    }
