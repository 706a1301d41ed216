"""The target topic's configuration: the source's as it was at the replay's start, and checks.

A faithful replay recreates the target topic as the source topic was when the replayed data
began (``replay run --create-topic``): its partition count and its dynamic topic-level config
overrides at that moment, as the metadata history gives them
(:class:`~kafka_archive.services.metadata_history.MetadataHistoryService`; this module sees it
through the :class:`TopicHistory` protocol, the replay layer sits below the services).
``--topic-config NAME=VALUE`` overrides win; ``--no-source-config`` uses none of the source's.

Pure functions, no Kafka client (the target side is :mod:`.target`):

* :func:`topic_settings` - what creation would set, decided at plan time and stored in the plan
  (:class:`TopicSettings`, by
  :func:`kafka_archive.replay.planning.plan_topics.plan_topic_settings`), so that the execute step
  (another process in Airflow) creates the same topic the dry run showed;
* :func:`portable_configs` - drops configs that cannot apply on another cluster, naming each;
* :func:`config_findings` - what the target's configs would do to the replayed data: errors
  (the broker would reject the records: the replay refuses to start) and warnings (the data
  lands, but changed or soon deleted). See docs/replay.md, "Target topic configuration".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

from pydantic import Field

from kafka_archive.frozen import FrozenModel

__all__ = [
    "KAFKA_DEFAULTS",
    "ConfigChoice",
    "ConfigDiff",
    "ConfigFinding",
    "DroppedConfig",
    "SourceTopicState",
    "TopicHistory",
    "TopicSettings",
    "config_diffs",
    "config_findings",
    "drop_for_replication",
    "portable_configs",
    "topic_settings",
    "unportable_reason",
]

#: Apache Kafka's defaults of the topic configs the checks read (a topic without an override
#: has its broker's default; these are what a broker without ``log.*`` overrides uses)
KAFKA_DEFAULTS: dict[str, str] = {
    "max.message.bytes": "1048588",
    "message.timestamp.type": "CreateTime",
    "cleanup.policy": "delete",
    "retention.ms": "604800000",
}

ConfigSource = Literal["source at T", "override", "target default"]


class SourceTopicState(Protocol):
    """What the replay reads of the history's ``TopicState`` (the services' dataclass)."""

    @property
    def topic_id(self) -> str | None: ...
    @property
    def partitions(self) -> int: ...
    @property
    def configs(self) -> dict[str, str]: ...
    @property
    def as_of_ms(self) -> int: ...
    @property
    def source(self) -> str: ...
    @property
    def resolution_note(self) -> str | None: ...


class TopicHistory(Protocol):
    """The metadata history as the replay asks it (``MetadataHistoryService`` is one).
    ``topic_at`` returns ``None`` when no such topic existed at ``at_ms`` and raises a
    ``LookupError`` when the history does not reach back to ``at_ms``."""

    def topic_at(self, cluster: str, topic: str, at_ms: int) -> SourceTopicState | None: ...


class ConfigChoice(FrozenModel):
    """One config of the target topic: its value and where it comes from."""

    name: str
    value: str
    source: ConfigSource


class DroppedConfig(FrozenModel):
    """A source config not set on the target, and why (every one is reported)."""

    name: str
    value: str
    reason: str


class ConfigDiff(FrozenModel):
    """A config whose value differs between the source at T and the target (``None``: not
    overridden on that side, i.e. the cluster's default)."""

    name: str
    source: str | None
    target: str | None


class ConfigFinding(FrozenModel):
    """What a target config would do to the replayed data: ``error`` - the broker would reject
    the records (the replay refuses to start); ``warning`` - they land, changed or at risk."""

    level: Literal["error", "warning"]
    name: str
    message: str
    hint: str = ""


class TopicSettings(FrozenModel):
    """The target topic's settings as the plan decided them (stored with the plan).

    ``configs`` is what creating the topic sets (the source's overrides at ``at_ms`` unless
    ``--no-source-config``, then the ``--topic-config`` overrides), ``dropped`` the source
    configs left out; ``source_configs`` are the source's overrides at ``at_ms`` whether or not
    they are used (the existing-target comparison reads them). ``found`` is False when the
    history had no state of the topic at ``at_ms`` (``notes`` says so; the partition count then
    comes from the archive). ``data_first_ms``/``data_last_ms`` bound the replayed records'
    timestamps (from the catalog), for the retention and timestamp-bound checks.
    """

    at_ms: int | None = None
    found: bool = False
    history_source: str | None = None
    as_of_ms: int | None = None
    topic_id: str | None = None
    resolution_note: str | None = None
    source_partitions: int | None = None
    source_configs: dict[str, str] = Field(default_factory=dict)
    configs: list[ConfigChoice] = Field(default_factory=list)
    dropped: list[DroppedConfig] = Field(default_factory=list)
    replication_factor: int | None = None
    data_first_ms: int | None = None
    data_last_ms: int | None = None
    notes: list[str] = Field(default_factory=list)

    def config_dict(self) -> dict[str, str]:
        """``configs`` as the ``CreateTopics`` request takes them (target defaults left out)."""
        return {c.name: c.value for c in self.configs if c.source != "target default"}


#: configs naming brokers or replicas of the source cluster: meaningless on another cluster
_BROKER_SPECIFIC = {
    "leader.replication.throttled.replicas": "lists the source cluster's replicas to throttle",
    "follower.replication.throttled.replicas": "lists the source cluster's replicas to throttle",
}


def unportable_reason(name: str) -> str | None:
    """Why the source config ``name`` must not be copied to another cluster (``None``: it may).

    Broker-specific replica throttles name the source's broker ids; ``confluent.*`` configs
    belong to Confluent Server and an Apache Kafka target refuses them.
    """
    if name in _BROKER_SPECIFIC:
        return _BROKER_SPECIFIC[name]
    if name.startswith("confluent."):
        return "a Confluent Server config (not Apache Kafka's)"
    return None


def portable_configs(configs: Mapping[str, str]) -> tuple[dict[str, str], list[DroppedConfig]]:
    """Split the source's configs into those that may be set on another cluster and the
    dropped ones (with the reason)."""
    kept: dict[str, str] = {}
    dropped: list[DroppedConfig] = []
    for name in sorted(configs):
        reason = unportable_reason(name)
        if reason is None:
            kept[name] = configs[name]
        else:
            dropped.append(DroppedConfig(name=name, value=configs[name], reason=reason))
    return kept, dropped


def topic_settings(
    history: TopicHistory | None,
    *,
    cluster: str,
    topic: str,
    at_ms: int | None,
    overrides: Mapping[str, str],
    use_source: bool,
    archive_partitions: int,
    replication_factor: int | None = None,
    data_span: tuple[int | None, int | None] = (None, None),
) -> TopicSettings:
    """Decide the target topic's settings for a replay starting at ``at_ms`` (see
    :class:`TopicSettings`). ``history`` ``None`` (no metadata history configured) or no state
    at ``at_ms``: a note says so and the partition count is the archive's
    (``archive_partitions``)."""
    notes: list[str] = []
    state = None
    if history is None:
        notes.append(
            "no metadata history is available: the source's topic configs at the start are "
            f"unknown; the partition count ({archive_partitions}) comes from the archive"
        )
    elif at_ms is None:
        notes.append("the replay's start time is unknown (no timestamps in the archive)")
    else:
        try:
            state = history.topic_at(cluster, topic, at_ms)
        except LookupError as exc:  # the history begins later (e.g. with a KRaft snapshot)
            notes.append(
                f"{exc}: the source's configs are unknown; the partition count "
                f"({archive_partitions}) comes from the archive"
            )
        else:
            if state is None:
                notes.append(
                    f"the metadata history holds no state of {cluster}/{topic} at the replay's "
                    "start (no metadata log or Admin snapshot archived for then): the source's "
                    f"configs are unknown; the partition count ({archive_partitions}) comes from "
                    "the archive"
                )
    source_configs = dict(state.configs) if state is not None else {}
    kept, dropped = portable_configs(source_configs)
    choices: list[ConfigChoice] = []
    for name in sorted(set(kept) | set(overrides)):
        if name in overrides:
            choices.append(ConfigChoice(name=name, value=overrides[name], source="override"))
        elif use_source:
            choices.append(ConfigChoice(name=name, value=kept[name], source="source at T"))
        else:
            # --no-source-config: shown, so the dry run says what is *not* copied
            choices.append(ConfigChoice(name=name, value=kept[name], source="target default"))
    if not use_source:
        dropped = []  # nothing of the source is used: nothing to drop
    if state is not None and state.resolution_note:
        notes.append(state.resolution_note)
    return TopicSettings(
        at_ms=at_ms,
        found=state is not None,
        history_source=state.source if state is not None else None,
        as_of_ms=state.as_of_ms if state is not None else None,
        topic_id=state.topic_id if state is not None else None,
        resolution_note=state.resolution_note if state is not None else None,
        source_partitions=state.partitions if state is not None else None,
        source_configs=source_configs,
        configs=choices,
        dropped=dropped,
        replication_factor=replication_factor,
        data_first_ms=data_span[0],
        data_last_ms=data_span[1],
        notes=notes,
    )


def drop_for_replication(
    settings: TopicSettings, replication_factor: int | None
) -> tuple[dict[str, str], list[DroppedConfig]]:
    """The configs to create the topic with on a target where its replication factor is
    ``replication_factor`` (``None``: unknown): a ``min.insync.replicas`` from the source above
    it would make every ``acks=all`` write fail, so it is dropped (an override is kept: the
    operator asked for it)."""
    configs = settings.config_dict()
    dropped: list[DroppedConfig] = []
    mir = configs.get("min.insync.replicas")
    from_source = any(
        c.name == "min.insync.replicas" and c.source == "source at T" for c in settings.configs
    )
    if from_source and mir is not None and replication_factor is not None:
        try:
            too_high = int(mir) > replication_factor
        except ValueError:
            too_high = False
        if too_high:
            del configs["min.insync.replicas"]
            dropped.append(
                DroppedConfig(
                    name="min.insync.replicas",
                    value=mir,
                    reason=f"above the target's replication factor {replication_factor} "
                    "(acks=all writes would fail)",
                )
            )
    return configs, dropped


def config_diffs(source: Mapping[str, str], target: Mapping[str, str]) -> list[ConfigDiff]:
    """The configs whose values differ between the source's overrides at T and the target
    topic's non-default configs (both sides as ``name -> value``)."""
    return [
        ConfigDiff(name=n, source=source.get(n), target=target.get(n))
        for n in sorted(set(source) | set(target))
        if source.get(n) != target.get(n)
    ]


def _int(configs: Mapping[str, str], name: str) -> int | None:
    try:
        return int(configs[name])
    except (KeyError, ValueError):
        return None


def _age(ms: int) -> str:
    hours = ms / 3_600_000
    return f"{hours / 24:.1f} days" if hours >= 48 else f"{hours:.1f} h"


def config_findings(
    settings: TopicSettings,
    target: Mapping[str, str],
    *,
    preserve_timestamps: bool,
    now_ms: int,
) -> list[ConfigFinding]:
    """What the target topic's effective configs (``target``: name -> value, defaults
    included when known) would do to the replayed data (rules: docs/replay.md).

    Errors: timestamp bounds (``message.timestamp.before.max.ms``/``after.max.ms``, Kafka 3.6+,
    and ``message.timestamp.difference.max.ms``) that reject the replayed records' preserved
    CreateTime timestamps. Warnings: ``max.message.bytes`` smaller than the source's (a batch
    the source accepted may be refused: the run then fails, resumably), LogAppendTime (the
    broker rewrites the timestamps), ``cleanup.policy`` with compact where the source had none
    (compaction drops all but the last record per key, and refuses records without a key),
    ``retention.ms`` shorter than the replayed data's age (the broker deletes it soon after).
    """
    src = {**KAFKA_DEFAULTS, **settings.source_configs}
    out: list[ConfigFinding] = []
    t_max, s_max = _int(target, "max.message.bytes"), _int(src, "max.message.bytes")
    if t_max is not None and s_max is not None and t_max < s_max:
        out.append(
            ConfigFinding(
                level="warning",
                name="max.message.bytes",
                message=f"the target allows batches of {t_max} bytes, the source {s_max}: a "
                "larger record batch is refused (RECORD_TOO_LARGE) and the run stops there",
                hint=f"alter the target topic's max.message.bytes to {s_max} (or pass "
                f"--topic-config max.message.bytes={s_max} when creating it)",
            )
        )
    ts_type = target.get("message.timestamp.type", "CreateTime")
    if ts_type == "LogAppendTime" and src.get("message.timestamp.type") != "LogAppendTime":
        out.append(
            ConfigFinding(
                level="warning",
                name="message.timestamp.type",
                message="the target topic uses LogAppendTime: the broker replaces every "
                "replayed record's timestamp with the time it is written",
                hint="alter the target's message.timestamp.type to CreateTime to keep the "
                "source timestamps",
            )
        )
    t_policy = target.get("cleanup.policy", "delete")
    s_policy = src.get("cleanup.policy", "delete")
    if "compact" in t_policy and "compact" not in s_policy:
        out.append(
            ConfigFinding(
                level="warning",
                name="cleanup.policy",
                message=f"the target compacts ({t_policy}), the source did not ({s_policy}): "
                "compaction keeps only the last record of each key, and the broker refuses "
                "records without a key",
                hint="replay into a topic with cleanup.policy=delete to keep every record",
            )
        )
    elif t_policy != s_policy:
        out.append(
            ConfigFinding(
                level="warning",
                name="cleanup.policy",
                message=f"cleanup.policy differs: source {s_policy}, target {t_policy}",
            )
        )
    first = settings.data_first_ms
    retention = _int(target, "retention.ms")
    if first is not None and retention is not None and retention >= 0:
        age = now_ms - first
        if age > retention:
            out.append(
                ConfigFinding(
                    level="warning",
                    name="retention.ms",
                    message=f"the oldest replayed record is {_age(age)} old, older than the "
                    f"target's retention.ms ({_age(retention)}): the broker deletes it "
                    "soon after it lands",
                    hint=f"pass --topic-config retention.ms={age + 7 * 86_400_000} (or -1) "
                    "or alter the target's retention.ms first",
                )
            )
    if preserve_timestamps and ts_type == "CreateTime":
        out += _timestamp_bounds(settings, target, now_ms)
    return out


def _timestamp_bounds(
    settings: TopicSettings, target: Mapping[str, str], now_ms: int
) -> list[ConfigFinding]:
    """The broker's timestamp validation of CreateTime records: before/after bounds since
    Kafka 3.6 (KIP-937), the older symmetric difference bound before that."""
    out: list[ConfigFinding] = []
    first, last = settings.data_first_ms, settings.data_last_ms
    past = now_ms - first if first is not None else None
    future = last - now_ms if last is not None else None
    bounds: Sequence[tuple[str, int | None, str]] = (
        ("message.timestamp.before.max.ms", past, "in the past"),
        ("message.timestamp.difference.max.ms", past, "in the past"),
        ("message.timestamp.after.max.ms", future, "in the future"),
    )
    for name, span, where in bounds:
        bound = _int(target, name)
        if bound is None or span is None or span <= bound:
            continue
        out.append(
            ConfigFinding(
                level="error",
                name=name,
                message=f"the target rejects records whose timestamp is more than {bound} ms "
                f"{where} ({name}); the replayed records reach {span} ms {where} "
                "(INVALID_TIMESTAMP)",
                hint=f"alter the target topic's {name} (e.g. to {span + 86_400_000}), pass "
                f"--topic-config {name}=... when creating it, or replay with "
                "--no-preserve-timestamps",
            )
        )
    return out
