"""``ArchiveConfig``: which clusters, brokers and log dirs to archive, and where to.

The same model configures the Airflow DAG and documents the CLI's flags. Example (YAML; JSON is
the same structure)::

    store_uri: s3://kafka-archive-prod/segments    # or file:///srv/kafka-archive
    store_options: {sse: aws:kms, multipart_chunksize: 67108864}
    schedule: "*/10 * * * *"                        # cron, preset (@hourly) or ISO 8601 duration
    concurrency: 4                                  # parallel segment uploads per log dir
    state_dir: /var/cache/kafka-archive             # digest cache on each worker (optional)
    clusters:
      - name: prod-eu
        topics: ["orders", "payments-*"]              # optional globs (default: every topic)
        brokers:
          - {id: 1, log_dirs: [/var/lib/kafka/data-1, /var/lib/kafka/data-2], queue: kafka-broker-1}
          - {id: 2, log_dirs: [/var/lib/kafka/data-1], queue: kafka-broker-2}

Where it is read from (:func:`load_config`):

1. the Airflow Variable ``kafka_archive_config`` (JSON; also settable as the environment
   variable ``AIRFLOW_VAR_KAFKA_ARCHIVE_CONFIG``), else
2. the YAML or JSON file named by the environment variable ``KAFKA_ARCHIVE_CONFIG``.

``queue`` is the Celery queue of the Airflow worker that runs beside that broker with its log
volume mounted (read-only); tasks for the broker's log dirs are sent there. Brokers without a
queue use the DAG's default queue (a worker that can see every log dir, e.g. all volumes
mounted, or a single-host setup). The DAG needs the set of queues when it is *parsed*, so it
reads only the environment-based sources then (:func:`parse_time_config`); see docs/archive.md.

Credentials never belong here: S3 credentials come from the environment, an instance role or an
Airflow connection (``store_options`` are the non-secret :class:`~kafka_archive.store.S3Options`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from pydantic import Field, ValidationError, field_validator, model_validator

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.frozen import FrozenModel
from kafka_archive.settings import CONFIG_FILE_ENV, SETTINGS, env_var

__all__ = [
    "CONFIG_ENV",
    "CONFIG_VARIABLE",
    "DEFAULT_SCHEDULE",
    "SCHEDULE_ENV",
    "ArchiveConfig",
    "ArchiveTarget",
    "BrokerConfig",
    "ClusterConfig",
    "ConfigError",
    "load_config",
    "parse_config_text",
    "parse_schedule",
    "parse_time_config",
    "parse_time_schedule",
]

#: Airflow Variable holding the JSON config.
CONFIG_VARIABLE: Final = "kafka_archive_config"
#: Environment variable naming a YAML/JSON config file.
CONFIG_ENV: Final = CONFIG_FILE_ENV
#: Environment variable overriding the DAG schedule (else the config's, else the default).
SCHEDULE_ENV: Final = env_var("schedule")
#: Airflow Variable for the schedule (read from its environment form only, at parse time).
SCHEDULE_VARIABLE: Final = "kafka_archive_schedule"
DEFAULT_SCHEDULE: Final = "*/10 * * * *"

#: keys of the configuration file that are platform settings (see kafka_archive.settings)
SETTING_FILE_KEYS: Final = frozenset(s.key for s in SETTINGS)
_CLUSTER_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")
_QUEUE_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")
_ISO_DURATION: Final = re.compile(
    r"P(?:(?P<d>\d+)D)?(?:T(?:(?P<h>\d+)H)?(?:(?P<m>\d+)M)?(?:(?P<s>\d+)S)?)?"
)


class ConfigError(KafkaArchiveError, ValueError):
    """The archive configuration is missing or invalid; the message says where and why."""


class BrokerConfig(FrozenModel):
    """One broker: its id (``node.id``/``broker.id``), its ``log.dirs`` and its worker queue."""

    id: int = Field(ge=0, le=2**31 - 1)
    log_dirs: list[str] = Field(min_length=1)
    queue: str | None = None

    @field_validator("log_dirs")
    @classmethod
    def _absolute_unique(cls, value: list[str]) -> list[str]:
        for d in value:
            if not os.path.isabs(d):
                raise ValueError(f"log dir {d!r} must be an absolute path")
        if len(set(value)) != len(value):
            raise ValueError("log dirs must be unique")
        return value

    @field_validator("queue")
    @classmethod
    def _queue_name(cls, value: str | None) -> str | None:
        if value is not None and _QUEUE_RE.fullmatch(value) is None:
            raise ValueError(f"queue {value!r} must match [A-Za-z0-9][A-Za-z0-9._:-]*")
        return value


class ClusterConfig(FrozenModel):
    """One Kafka cluster: a name (the first key segment in the store) and its brokers."""

    name: str
    brokers: list[BrokerConfig] = Field(min_length=1)
    #: overrides :attr:`ArchiveConfig.store_uri` for this cluster
    store_uri: str | None = None
    #: glob patterns of the topics to archive (empty: every topic; the internal topics always:
    #: :mod:`kafka_archive.archive.topic_selection`)
    topics: list[str] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if _CLUSTER_RE.fullmatch(value) is None:
            raise ValueError(f"cluster name {value!r} must match [A-Za-z0-9][A-Za-z0-9._-]*")
        return value

    @field_validator("brokers")
    @classmethod
    def _unique_ids(cls, value: list[BrokerConfig]) -> list[BrokerConfig]:
        ids = [b.id for b in value]
        if len(set(ids)) != len(ids):
            raise ValueError(f"broker ids must be unique, got {ids}")
        return value


class ArchiveTarget(FrozenModel):
    """One unit of archiving work: a log dir of a broker of a cluster (one mapped task)."""

    cluster: str
    broker_id: int
    log_dir: str
    queue: str | None = None
    store_uri: str
    #: glob patterns of the topics to archive (empty: every topic)
    topics: list[str] = Field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.cluster}/broker-{self.broker_id}:{self.log_dir}"


class ArchiveConfig(FrozenModel):
    """The whole archive configuration (see the module docstring)."""

    store_uri: str
    store_options: dict[str, Any] = Field(default_factory=dict)
    clusters: list[ClusterConfig] = Field(min_length=1)
    schedule: str = DEFAULT_SCHEDULE
    concurrency: int = Field(default=4, ge=1, le=64)
    state_dir: str | None = None

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        parse_schedule(value)
        return value

    @model_validator(mode="after")
    def _unique_clusters(self) -> ArchiveConfig:
        names = [c.name for c in self.clusters]
        if len(set(names)) != len(names):
            raise ValueError(f"cluster names must be unique, got {names}")
        return self

    def cluster(self, name: str) -> ClusterConfig:
        for c in self.clusters:
            if c.name == name:
                return c
        raise ConfigError(f"no cluster {name!r} in the configuration")

    def targets(self, clusters: list[str] | None = None) -> list[ArchiveTarget]:
        """Every (cluster, broker, log dir), in config order, optionally for some clusters."""
        wanted = set(clusters) if clusters else None
        if wanted is not None:
            unknown = wanted - {c.name for c in self.clusters}
            if unknown:
                raise ConfigError(f"unknown cluster(s) {sorted(unknown)}")
        return [
            ArchiveTarget(
                cluster=c.name,
                broker_id=b.id,
                log_dir=d,
                queue=b.queue,
                store_uri=c.store_uri or self.store_uri,
                topics=list(c.topics),
            )
            for c in self.clusters
            if wanted is None or c.name in wanted
            for b in c.brokers
            for d in b.log_dirs
        ]

    def queues(self) -> list[str | None]:
        """Distinct worker queues, ``None`` (the default queue) first when used."""
        found = {b.queue for c in self.clusters for b in c.brokers}
        return sorted(found, key=lambda q: (q is not None, q or ""))


def parse_schedule(value: str) -> str | timedelta:
    """A schedule as Airflow takes it: a cron expression or preset stays a string, an ISO 8601
    duration (``PT10M``) becomes a ``timedelta``. Raises ``ValueError`` for anything else."""
    text = value.strip()
    if text.startswith("@"):
        if text not in {
            "@once",
            "@continuous",
            "@hourly",
            "@daily",
            "@weekly",
            "@monthly",
            "@quarterly",
            "@yearly",
            "@annually",
        }:
            raise ValueError(f"unknown schedule preset {text!r}")
        return text
    m = _ISO_DURATION.fullmatch(text)
    if m is not None and text != "P" and text != "PT":
        delta = timedelta(
            days=int(m["d"] or 0),
            hours=int(m["h"] or 0),
            minutes=int(m["m"] or 0),
            seconds=int(m["s"] or 0),
        )
        if delta <= timedelta(0):
            raise ValueError(f"schedule duration {text!r} must be positive")
        return delta
    fields = text.split()
    if len(fields) not in (5, 6) or not all(
        re.fullmatch(r"[0-9*/,\-A-Za-z?LW#]+", f) for f in fields
    ):
        raise ValueError(
            f"schedule {value!r} is neither a cron expression, a preset nor a duration like PT10M"
        )
    return text


def parse_config_text(text: str, *, source: str) -> ArchiveConfig:
    """Parse YAML or JSON text (JSON is YAML) into an :class:`ArchiveConfig`."""
    import yaml

    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML/JSON: {exc}") from None
    return config_from_mapping(raw, source=source)


def config_from_mapping(raw: object, *, source: str) -> ArchiveConfig:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: the configuration must be a mapping (JSON object)")
    # the file also holds platform settings (db_url, spark_master, ...; see
    # kafka_archive.settings): those that are not archive fields are the settings' business
    fields = set(ArchiveConfig.model_fields)
    data = {k: v for k, v in raw.items() if k in fields or k not in SETTING_FILE_KEYS}
    try:
        return ArchiveConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{source}: invalid archive configuration:\n{exc}") from None


def _read_file(path: str) -> ArchiveConfig:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{CONFIG_ENV}={path!r} cannot be read: {exc.strerror or exc}") from None
    return parse_config_text(text, source=path)


def load_config(
    variable_text: str | None = None, *, environ: Mapping[str, str] | None = None
) -> ArchiveConfig:
    """The configuration at run time.

    ``variable_text`` is the value of the Airflow Variable ``kafka_archive_config`` (the caller
    fetches it, so this module needs no Airflow); when it is empty, the file named by
    ``$KAFKA_ARCHIVE_CONFIG`` is read. Raises :class:`ConfigError` when neither is set.
    """
    env = os.environ if environ is None else environ
    if variable_text:
        return parse_config_text(variable_text, source=f"Airflow Variable {CONFIG_VARIABLE}")
    path = env.get(CONFIG_ENV)
    if path:
        return _read_file(path)
    raise ConfigError(
        f"no archive configuration: set the Airflow Variable {CONFIG_VARIABLE!r} (JSON) or "
        f"point ${CONFIG_ENV} at a YAML/JSON file (see docs/archive.md)"
    )


def parse_time_config(environ: Mapping[str, str] | None = None) -> ArchiveConfig | None:
    """The configuration as far as the DAG file may learn it while being *parsed*.

    Only environment-based sources are read (no database or network access at parse time):
    ``AIRFLOW_VAR_KAFKA_ARCHIVE_CONFIG`` (the environment form of the Variable) or the file
    named by ``$KAFKA_ARCHIVE_CONFIG``. Returns ``None`` when neither is set or the config is
    invalid (the DAG still loads; its tasks report the problem when they run).
    """
    env = os.environ if environ is None else environ
    text = env.get("AIRFLOW_VAR_" + CONFIG_VARIABLE.upper())
    try:
        if text:
            return parse_config_text(text, source="AIRFLOW_VAR_" + CONFIG_VARIABLE.upper())
        path = env.get(CONFIG_ENV)
        if path:
            return _read_file(path)
    except ConfigError:
        return None
    return None


def parse_time_schedule(
    environ: Mapping[str, str] | None = None, config: ArchiveConfig | None = None
) -> str | timedelta:
    """The DAG schedule: ``$KAFKA_ARCHIVE_SCHEDULE``, else ``AIRFLOW_VAR_KAFKA_ARCHIVE_SCHEDULE``,
    else the config's ``schedule``, else every 10 minutes. An invalid override is ignored in
    favour of the next source (the DAG must always load)."""
    env = os.environ if environ is None else environ
    for candidate in (
        env.get(SCHEDULE_ENV),
        env.get("AIRFLOW_VAR_" + SCHEDULE_VARIABLE.upper()),
        config.schedule if config is not None else None,
    ):
        if candidate:
            try:
                return parse_schedule(candidate)
            except ValueError:
                continue
    return DEFAULT_SCHEDULE


def dump_config_json(config: ArchiveConfig) -> str:
    """The config as the JSON an Airflow Variable holds."""
    return json.dumps(config.model_dump(mode="json"), indent=2)
