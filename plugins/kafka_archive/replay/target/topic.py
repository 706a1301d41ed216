"""The target topic's configs on the target cluster: create it as the source was, check it.

Called by :func:`.target.check_target` (step 2 of a replay) with the plan's
:class:`~.topic_config.TopicSettings`:

* a missing target topic with ``create_topic``: :func:`create_topic` creates it with the
  settings' configs and replication factor. The configs are first sent with ``validate_only``;
  a source config the target refuses (unknown to its Kafka version, a feature it lacks such as
  ``remote.storage.enable``, a value it does not take) is dropped with the broker's reason and
  the request validated again - never silently: each drop is in the report and the log. An
  ``--topic-config`` override the target refuses is an error (the operator asked for it).
* :func:`check_configs` - the target topic's configs (DescribeConfigs) against the source's at
  T: the differences, and :func:`~.topic_config.config_findings` (errors refuse the replay
  before anything is sent, unless it is a dry run, which reports them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from pydantic import BaseModel, Field

from kafka_archive.replay.errors import TargetConfigError, TargetTopicMissingError
from kafka_archive.replay.planning.topic_config import (
    ConfigDiff,
    ConfigFinding,
    DroppedConfig,
    TopicSettings,
    config_diffs,
    config_findings,
    drop_for_replication,
)

__all__ = [
    "TargetTopicConfig",
    "TopicConfigCheck",
    "check_configs",
    "create_configured",
    "create_topic",
    "default_replication_factor",
    "describe_topic_configs",
    "unchecked",
]

#: how long one admin request may take
ADMIN_TIMEOUT_S = 30.0

#: the ``source`` of a DescribeConfigs entry set on the topic itself (ConfigSource)
_DYNAMIC_TOPIC_CONFIG = 1


@dataclass(frozen=True, slots=True)
class TargetTopicConfig:
    """An existing topic's configs: ``effective`` every config with a value (defaults
    included), ``overrides`` the ones set on the topic itself."""

    effective: dict[str, str]
    overrides: dict[str, str]


class TopicConfigCheck(BaseModel):
    """What step 2 did and found about the target topic's configs (in the report)."""

    settings: TopicSettings
    #: the configs the topic was (or, in a dry run, would be) created with; ``None``: it exists
    created_with: dict[str, str] | None = None
    replication_factor: int | None = None
    dropped: list[DroppedConfig] = Field(default_factory=list)
    #: source at T vs the existing target's overrides
    diffs: list[ConfigDiff] = Field(default_factory=list)
    target_partitions: int | None = None
    findings: list[ConfigFinding] = Field(default_factory=list)

    @property
    def errors(self) -> list[ConfigFinding]:
        return [f for f in self.findings if f.level == "error"]

    def warnings(self) -> list[str]:
        """Every line an operator must see before the replay starts (drops, notes, findings)."""
        out = list(self.settings.notes)
        out += [f"{d.name}={d.value} not set on the target: {d.reason}" for d in self.dropped]
        out += [
            f"{f.name}: {f.message}" + (f" ({f.hint})" if f.hint else "") for f in self.findings
        ]
        return out


def _result(future: Any) -> Any:
    try:
        return future.result(ADMIN_TIMEOUT_S * 2)
    except KafkaException as exc:
        raise exc from None


def describe_topic_configs(admin: AdminClient, topic: str) -> TargetTopicConfig:
    """The topic's configs (DescribeConfigs).

    Raises:
        KafkaException: the target refused (e.g. no DescribeConfigs permission).
    """
    resource = ConfigResource(ResourceType.TOPIC, topic)
    futures = admin.describe_configs([resource], request_timeout=ADMIN_TIMEOUT_S)
    entries = _result(next(iter(futures.values())))
    effective: dict[str, str] = {}
    overrides: dict[str, str] = {}
    for name, entry in entries.items():
        if entry.value is None:
            continue
        effective[str(name)] = str(entry.value)
        if getattr(entry.source, "value", entry.source) == _DYNAMIC_TOPIC_CONFIG:
            overrides[str(name)] = str(entry.value)
    return TargetTopicConfig(effective, overrides)


def default_replication_factor(admin: AdminClient, broker: int) -> int | None:
    """``default.replication.factor`` of one target broker (``None``: not answered)."""
    resource = ConfigResource(ResourceType.BROKER, str(broker))
    try:
        futures = admin.describe_configs([resource], request_timeout=ADMIN_TIMEOUT_S)
        entries = _result(next(iter(futures.values())))
        entry = entries.get("default.replication.factor")
        return int(entry.value) if entry is not None and entry.value is not None else None
    except (KafkaException, ValueError):
        return None


def _named(message: str, names: list[str]) -> str | None:
    """The config of ``names`` the broker's error ``message`` names (longest match first, so
    that ``retention.ms`` is not taken for ``local.retention.ms``)."""
    for name in sorted(names, key=len, reverse=True):
        if re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w.])", message):
            return name
    return None


def _create(
    admin: AdminClient,
    topic: str,
    partitions: int,
    replication_factor: int,
    configs: dict[str, str],
    *,
    validate_only: bool,
) -> KafkaError | None:
    futures = admin.create_topics(
        [NewTopic(topic, partitions, replication_factor, config=dict(configs))],
        operation_timeout=ADMIN_TIMEOUT_S,
        request_timeout=ADMIN_TIMEOUT_S,
        validate_only=validate_only,
    )
    try:
        _result(futures[topic])
    except KafkaException as exc:
        err = exc.args[0]
        if err.code() == KafkaError.TOPIC_ALREADY_EXISTS and not validate_only:
            return None  # another replay created it a moment ago
        return err  # type: ignore[no-any-return]
    return None


def create_topic(
    admin: AdminClient,
    topic: str,
    partitions: int,
    *,
    configs: dict[str, str],
    overrides: set[str],
    replication_factor: int | None = None,
    validate_only: bool = False,
) -> tuple[dict[str, str], list[DroppedConfig]]:
    """Create ``topic`` with ``configs`` (see the module docstring); returns the configs it
    was created with and the ones dropped. ``validate_only``: ask the target, create nothing.

    Raises:
        TargetTopicMissingError: the target refused the topic (naming what and why).
    """
    rf = replication_factor if replication_factor is not None else -1
    configs = dict(configs)
    dropped: list[DroppedConfig] = []
    while True:
        err = _create(admin, topic, partitions, rf, configs, validate_only=True)
        if err is None:
            break
        text = err.str() or err.name()
        name = _named(text, [n for n in configs if n not in overrides])
        if err.code() != KafkaError.INVALID_CONFIG or name is None:
            named = _named(text, list(configs))
            raise TargetTopicMissingError(
                f"creating {topic} with {partitions} partitions on the target failed"
                + (f", replication factor {rf}" if rf > 0 else "")
                + f": {text}",
                hint=(
                    f"Fix or leave out --topic-config {named}"
                    if named is not None
                    else "Pass --replication-factor N (at most the target's broker count), "
                    "--topic-config NAME=VALUE or --no-source-config, or create the topic with "
                    "your usual tooling, and run again."
                ),
            )
        dropped.append(
            DroppedConfig(
                name=name, value=configs.pop(name), reason=f"the target refuses it: {text}"
            )
        )
    if not validate_only:
        err = _create(admin, topic, partitions, rf, configs, validate_only=False)
        if err is not None:
            raise TargetTopicMissingError(
                f"creating {topic} with {partitions} partitions on the target failed: "
                f"{err.str() or err.name()}",
                hint="Create the topic with your usual tooling (the target may not allow "
                "CreateTopics) and run again.",
            )
    return configs, dropped


def create_configured(
    admin: AdminClient,
    settings: TopicSettings,
    topic: str,
    partitions: int,
    *,
    brokers: list[int],
    validate_only: bool,
) -> TopicConfigCheck:
    """Create the missing target ``topic`` with ``partitions`` and the settings' configs
    (``validate_only``, a dry run: ask the target, create nothing); returns what it was created
    with and every config left out (the settings' own drops, ``min.insync.replicas`` above the
    replication factor, the ones the target refused).

    Raises:
        TargetTopicMissingError: the target refused to create the topic.
    """
    rf = settings.replication_factor
    if rf is None and brokers:
        rf = default_replication_factor(admin, brokers[0])
    configs, too_high = drop_for_replication(settings, rf)
    created, refused = create_topic(
        admin,
        topic,
        partitions,
        configs=configs,
        overrides={c.name for c in settings.configs if c.source == "override"},
        replication_factor=settings.replication_factor,
        validate_only=validate_only,
    )
    return TopicConfigCheck(
        settings=settings,
        created_with=created,
        replication_factor=rf,
        dropped=[*settings.dropped, *too_high, *refused],
        target_partitions=partitions,
    )


def unchecked(
    settings: TopicSettings, created: TopicConfigCheck | None, why: str
) -> TopicConfigCheck:
    """The check when the target topic's configs cannot be read (``why``): one warning saying
    they are not checked - the replay may still run."""
    return (created or TopicConfigCheck(settings=settings)).model_copy(
        update={
            "findings": [
                ConfigFinding(
                    level="warning",
                    name="*",
                    message=f"the target topic's configs could not be read ({why}): they are "
                    "not checked against the replayed data",
                    hint="grant DescribeConfigs on the topic to the replay's principal",
                )
            ]
        }
    )


def check_configs(
    admin: AdminClient,
    settings: TopicSettings,
    topic: str,
    *,
    created: TopicConfigCheck | None,
    preserve_timestamps: bool,
    now_ms: int,
    read_only: bool,
) -> TopicConfigCheck:
    """The target topic's configs against the source's at T and the replayed data.

    ``created``: what :func:`create_configured` did (``None``: the topic existed, and its
    overrides are compared with the source's). The findings are computed on the topic's
    effective configs (DescribeConfigs; in a dry run of a creation, the configs it would be
    created with, the target's defaults being unknown then).

    Raises:
        TargetConfigError: a finding is an error (a dry run reports them instead).
    """
    if created is not None and read_only:
        check = created
        effective = dict(created.created_with or {})
    else:
        try:
            described = describe_topic_configs(admin, topic)
        except KafkaException as exc:
            # e.g. no DescribeConfigs permission: the replay may still run; say what is unknown
            err = exc.args[0] if exc.args else exc
            return unchecked(
                settings, created, err.str() if isinstance(err, KafkaError) else str(err)
            )
        effective = described.effective
        check = created or TopicConfigCheck(
            settings=settings, diffs=config_diffs(settings.source_configs, described.overrides)
        )
    check = check.model_copy(
        update={
            "findings": config_findings(
                settings, effective, preserve_timestamps=preserve_timestamps, now_ms=now_ms
            )
        }
    )
    if check.errors and not read_only:
        raise TargetConfigError(
            f"the target topic {topic} would reject the replayed records: "
            + "; ".join(f"{f.name}: {f.message}" for f in check.errors),
            hint=" / ".join(f.hint for f in check.errors if f.hint),
            findings=[f.model_dump() for f in check.findings],
        )
    return check
