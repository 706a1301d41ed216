"""What an operator asks to replay: :class:`ReplaySpec` (cluster, topic, partitions,
``from``/``to``, mapping, filters, limits, how the target topic is made) and its
:class:`TargetSpec` (bootstrap servers and librdkafka settings; secrets never stored nor
printed: :func:`is_secret_setting`).

The range semantics of ``from``/``to`` and how a spec becomes a plan are in
:mod:`kafka_archive.replay.planning.plan` (:func:`~kafka_archive.replay.planning.plan.build_plan`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from kafka_archive.frozen import FrozenModel
from kafka_archive.replay.planning.position import Position

__all__ = [
    "DEFAULT_PROGRESS_TOPIC",
    "REDACTED",
    "PartitionMapping",
    "ReplaySpec",
    "TargetSpec",
    "is_secret_setting",
]

#: compacted topic on the target holding each replay's committed progress
DEFAULT_PROGRESS_TOPIC = "__kafka_archive_replay_progress"
PartitionMapping = Literal["same", "murmur2", "round-robin"]

#: librdkafka settings whose values are secrets: never stored in the catalog nor printed
_SECRET_MARKERS = ("password", "secret", "jaas", "token", ".pem", "credentials")
REDACTED = "***"


def is_secret_setting(name: str) -> bool:
    """Whether a librdkafka setting holds a secret (``sasl.password``, ``ssl.key.password``,
    ``sasl.oauthbearer.client.secret``, ``ssl.key.pem``, ...)."""
    lowered = name.lower()
    return any(m in lowered for m in _SECRET_MARKERS)


class TargetSpec(FrozenModel):
    """The target cluster: bootstrap servers plus librdkafka settings passed through (TLS,
    SASL, ...). ``name`` is a label for reports (e.g. the Airflow connection id)."""

    bootstrap_servers: str
    config: dict[str, str] = Field(default_factory=dict)
    name: str | None = None

    def client_config(self) -> dict[str, str]:
        """The librdkafka configuration shared by every client talking to the target."""
        return {**self.config, "bootstrap.servers": self.bootstrap_servers}

    def identity(self) -> str:
        """What identifies the target in a replay id (never credentials)."""
        return self.name or self.bootstrap_servers

    def redacted(self) -> TargetSpec:
        """The same target with secret settings replaced by ``***``."""
        return self.model_copy(
            update={
                "config": {
                    k: REDACTED if is_secret_setting(k) else v for k, v in self.config.items()
                }
            }
        )

    def with_config(self, extra: dict[str, str]) -> TargetSpec:
        """The same target with ``extra`` settings added (e.g. secrets given again on resume);
        a ``bootstrap.servers`` among them replaces the recorded servers (what an operator
        gives wins over what was recorded: :meth:`client_config` would otherwise drop it)."""
        extra = dict(extra)
        servers = extra.pop("bootstrap.servers", None) or self.bootstrap_servers
        return self.model_copy(
            update={"config": {**self.config, **extra}, "bootstrap_servers": servers}
        )

    def recorded_as_connection(self) -> bool:
        """Whether the bootstrap servers recorded are in fact the name of an Airflow
        connection (replays launched to a connection recorded its id there before the DAG
        resolved it at planning): no ``host:port``, equal to the target's name."""
        return bool(self.name) and self.bootstrap_servers == self.name and ":" not in self.name


class ReplaySpec(FrozenModel):
    """What an operator asks to replay (see the module docstring for range semantics)."""

    cluster: str
    topic: str
    partitions: list[int] | None = None
    from_: Position = Field(alias="from")
    to: Position | None = None
    target: TargetSpec
    target_topic: str | None = None
    partition_mapping: PartitionMapping = "same"
    preserve_timestamps: bool = True
    provenance_headers: bool = False
    key_filter: str | None = None
    rate_limit_mb: float | None = None
    rate_limit_records: float | None = None
    allow_same_topic: bool = False
    #: replay around the plan's holes (see :mod:`.completeness`) instead of refusing to start
    allow_gaps: bool = False
    create_topic: bool = False
    #: configs the created target topic gets over the source's (``--topic-config NAME=VALUE``)
    topic_config: dict[str, str] = Field(default_factory=dict)
    #: create the target topic with the source's configs at the start (``--no-source-config``)
    source_config: bool = True
    #: the created topic's replication factor (``None``: the target's default)
    replication_factor: int | None = Field(default=None, ge=1)
    force: bool = False
    dry_run: bool = False
    progress_topic: str = DEFAULT_PROGRESS_TOPIC
    #: a transaction is committed after this many records, bytes or milliseconds
    txn_max_records: int = 20_000
    txn_max_bytes: int = 16 * 1024 * 1024
    txn_max_ms: int = 2_000
    #: how records travel: ``auto`` sends the archived batches themselves when nothing per
    #: record is asked, the target can be reached by the protocol client and the partition's
    #: batches are not small (:mod:`~kafka_archive.replay.execution.batch_engine`); ``records``
    #: re-produces them one by one through librdkafka; ``batch`` sends whole batches wherever
    #: that can be done at all, small ones too. Each writes the same records (not part of the
    #: intent)
    replay_path: Literal["auto", "records", "batch"] = "auto"
    #: an explicit replay id (resume a replay by id); derived from the plan when ``None``
    replay_id: str | None = None

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("rate_limit_mb", "rate_limit_records")
    @classmethod
    def _positive(cls, v: float | None) -> float | None:
        if v is not None and v <= 0:
            raise ValueError("rate limits must be positive")
        return v

    @field_validator("txn_max_records", "txn_max_bytes", "txn_max_ms")
    @classmethod
    def _txn_positive(cls, v: int) -> int:
        if v <= 0:
            raise ValueError("transaction limits must be positive")
        return v

    @model_validator(mode="after")
    def _creation_options(self) -> ReplaySpec:
        if not self.create_topic and (
            self.topic_config or not self.source_config or self.replication_factor is not None
        ):
            raise ValueError(
                "topic_config, no_source_config and replication_factor apply to a created "
                "target topic: add create_topic (--create-topic)"
            )
        return self

    @property
    def effective_target_topic(self) -> str:
        return self.target_topic or self.topic
