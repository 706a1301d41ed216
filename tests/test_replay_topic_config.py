"""The target topic's configs of a replay (replay/planning/topic_config.py, replay/target/topic.py):
the source's at the start from a stub history, overrides, drops, findings, and the admin
requests against a fake AdminClient (the real cluster: tests/real_kafka/test_replay_configs.py).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from kafka_archive.airflow.replay_tasks import spec_from_params
from kafka_archive.replay.errors import (
    ReplayConfigError,
    TargetConfigError,
    TargetTopicMissingError,
)
from kafka_archive.replay.planning.plan import (
    PartitionPlan,
    PlannedSegment,
    ReplayPlan,
    ReplaySpec,
    TargetSpec,
    parse_position,
)
from kafka_archive.replay.planning.plan_topics import plan_topic_settings
from kafka_archive.replay.planning.topic_config import (
    TopicSettings,
    config_diffs,
    config_findings,
    drop_for_replication,
    topic_settings,
)
from kafka_archive.replay.target.topic import check_configs, create_configured, create_topic

DAY = 86_400_000
NOW = 1_800_000_000_000


@dataclass(frozen=True)
class State:
    """The history service's TopicState, as much as the replay reads."""

    topic_id: str | None
    partitions: int
    configs: dict[str, str]
    as_of_ms: int
    source: str = "metadata_log"
    resolution_note: str | None = None


@dataclass
class StubHistory:
    """``topic_at`` over a list of (time, state): the last state at or before T."""

    states: list[tuple[int, State]]
    asked: list[int] = field(default_factory=list)

    def topic_at(self, cluster: str, topic: str, at_ms: int) -> State | None:
        self.asked.append(at_ms)
        found = [s for t, s in self.states if t <= at_ms]
        return found[-1] if found else None


HISTORY = StubHistory(
    [
        (1000, State("AAAAAAAAAAAAAAAAAAAAAQ", 3, {"retention.ms": "86400000"}, 1000)),
        (
            5000,
            State(
                "AAAAAAAAAAAAAAAAAAAAAQ",
                6,
                {
                    "retention.ms": "172800000",
                    "cleanup.policy": "delete",
                    "min.insync.replicas": "3",
                    "leader.replication.throttled.replicas": "0:1,0:2",
                    "confluent.placement.constraints": "{}",
                },
                5000,
            ),
        ),
    ]
)


def settings(**kw: Any) -> TopicSettings:
    args: dict[str, Any] = {
        "cluster": "east",
        "topic": "orders",
        "at_ms": 6000,
        "overrides": {},
        "use_source": True,
        "archive_partitions": 8,
    }
    return topic_settings(HISTORY, **{**args, **kw})


def test_the_source_configs_at_t_with_overrides_and_drops() -> None:
    early = settings(at_ms=2000)
    assert early.found and early.source_partitions == 3 and early.as_of_ms == 1000
    assert early.config_dict() == {"retention.ms": "86400000"}
    got = settings(overrides={"retention.ms": "-1", "max.message.bytes": "2000000"})
    assert got.source_partitions == 6 and got.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert {(c.name, c.value, c.source) for c in got.configs} == {
        ("cleanup.policy", "delete", "source at T"),
        ("max.message.bytes", "2000000", "override"),
        ("min.insync.replicas", "3", "source at T"),
        ("retention.ms", "-1", "override"),
    }
    # broker-specific and Confluent configs are never copied, and each is named with why
    assert {d.name: d.reason for d in got.dropped} == {
        "confluent.placement.constraints": "a Confluent Server config (not Apache Kafka's)",
        "leader.replication.throttled.replicas": "lists the source cluster's replicas to throttle",
    }
    assert got.source_configs["retention.ms"] == "172800000"  # compared with an existing target


def test_no_source_config_and_no_history() -> None:
    bare = settings(use_source=False, overrides={"retention.ms": "-1"})
    assert bare.config_dict() == {"retention.ms": "-1"}
    assert {c.source for c in bare.configs if c.name != "retention.ms"} == {"target default"}
    assert bare.dropped == [] and bare.source_partitions == 6
    before = settings(at_ms=10)
    assert not before.found and before.config_dict() == {}
    assert "holds no state of east/orders" in before.notes[0]
    assert "(8) comes from the archive" in before.notes[0]
    none = topic_settings(
        None,
        cluster="east",
        topic="orders",
        at_ms=6000,
        overrides={},
        use_source=True,
        archive_partitions=8,
    )
    assert not none.found and "no metadata history" in none.notes[0]


def test_min_insync_replicas_above_the_replication_factor_is_dropped() -> None:
    configs, dropped = drop_for_replication(settings(), 1)
    assert "min.insync.replicas" not in configs and dropped[0].name == "min.insync.replicas"
    assert "replication factor 1" in dropped[0].reason
    assert drop_for_replication(settings(), 3)[1] == []
    # an override is what the operator asked for: kept
    asked = settings(overrides={"min.insync.replicas": "3"})
    assert drop_for_replication(asked, 1) == (asked.config_dict(), [])


def _findings(target: dict[str, str], **kw: Any) -> dict[str, str]:
    s = settings().model_copy(update={"data_first_ms": NOW - 10 * DAY, "data_last_ms": NOW})
    return {
        f.name: f.level
        for f in config_findings(
            s, target, preserve_timestamps=kw.get("preserve", True), now_ms=NOW
        )
    }


def test_findings_on_the_target_configs() -> None:
    assert _findings({"cleanup.policy": "delete", "retention.ms": "-1"}) == {}
    assert _findings({"max.message.bytes": "1000", "retention.ms": "-1"}) == {
        "max.message.bytes": "warning"
    }
    assert _findings({"message.timestamp.type": "LogAppendTime", "retention.ms": "-1"}) == {
        "message.timestamp.type": "warning"
    }
    assert _findings({"cleanup.policy": "compact", "retention.ms": "-1"}) == {
        "cleanup.policy": "warning"
    }
    # data 10 days old into 7 days of retention: deleted soon after it lands
    assert _findings({"retention.ms": str(7 * DAY)}) == {"retention.ms": "warning"}
    # the broker would reject 10-day-old CreateTime timestamps: an error, refused up front
    bounds = {"retention.ms": "-1", "message.timestamp.before.max.ms": str(DAY)}
    assert _findings(bounds) == {"message.timestamp.before.max.ms": "error"}
    legacy = {"retention.ms": "-1", "message.timestamp.difference.max.ms": str(DAY)}
    assert _findings(legacy) == {"message.timestamp.difference.max.ms": "error"}
    # ... unless the producer stamps the records, or the broker does (LogAppendTime)
    assert _findings(bounds, preserve=False) == {}
    log_append = {**bounds, "message.timestamp.type": "LogAppendTime"}
    assert _findings(log_append) == {"message.timestamp.type": "warning"}


def test_config_diffs() -> None:
    diffs = config_diffs({"retention.ms": "1", "a": "x"}, {"retention.ms": "2", "a": "x", "b": "y"})
    assert [(d.name, d.source, d.target) for d in diffs] == [
        ("b", None, "y"),
        ("retention.ms", "1", "2"),
    ]


# -- the admin requests, against a fake AdminClient -------------------------------------------


def _done(value: Any = None, error: KafkaError | None = None) -> Future[Any]:
    fut: Future[Any] = Future()
    if error is not None:
        fut.set_exception(KafkaException(error))
    else:
        fut.set_result(value)
    return fut


@dataclass
class Entry:
    value: str | None
    source: int = 5


@dataclass
class FakeAdmin:
    """Refuses (INVALID_CONFIG) every config named in ``unknown``, like a broker that does not
    know them; records every CreateTopics request; describes ``topics``."""

    unknown: set[str] = field(default_factory=set)
    topics: dict[str, dict[str, Entry]] = field(default_factory=dict)
    created: list[tuple[str, int, int, dict[str, str], bool]] = field(default_factory=list)

    def create_topics(self, new: list[Any], **kw: Any) -> dict[str, Future[Any]]:
        (t,) = new
        cfg = dict(t.config)
        self.created.append(
            (t.topic, t.num_partitions, t.replication_factor, cfg, kw["validate_only"])
        )
        bad = sorted(set(cfg) & self.unknown)
        if bad:
            err = KafkaError(KafkaError.INVALID_CONFIG, f"Unknown topic config name: {bad[0]}")
            return {t.topic: _done(error=err)}
        if not kw["validate_only"]:
            self.topics[t.topic] = {k: Entry(v, 1) for k, v in cfg.items()}
        return {t.topic: _done()}

    def describe_configs(self, resources: list[Any], **kw: Any) -> dict[Any, Future[Any]]:
        (r,) = resources
        if r.name not in self.topics:  # a broker: its default.replication.factor
            return {r: _done({"default.replication.factor": Entry("1")})}
        return {r: _done(self.topics[r.name])}


def test_configs_the_target_refuses_are_dropped_and_named() -> None:
    admin = FakeAdmin(unknown={"cleanup.policy"})
    s = settings(overrides={"retention.ms": "-1"})
    check = create_configured(admin, s, "new", 6, brokers=[1], validate_only=False)  # type: ignore[arg-type]
    assert check.created_with == {"retention.ms": "-1"}
    assert check.replication_factor == 1  # the target's default, from the broker's config
    assert {d.name for d in check.dropped} == {
        "cleanup.policy",  # refused by the target (its reason is the broker's message)
        "min.insync.replicas",  # 3 > replication factor 1
        "confluent.placement.constraints",
        "leader.replication.throttled.replicas",
    }
    assert any("Unknown topic config name: cleanup.policy" in d.reason for d in check.dropped)
    assert [c[4] for c in admin.created] == [True, True, False]  # validated, then created
    assert admin.topics["new"] == {"retention.ms": Entry("-1", 1)}


def test_an_override_the_target_refuses_is_an_error() -> None:
    admin = FakeAdmin(unknown={"retention.ms"})
    with pytest.raises(TargetTopicMissingError) as exc:
        create_topic(
            admin,  # type: ignore[arg-type]
            "new",
            3,
            configs={"retention.ms": "-1"},
            overrides={"retention.ms"},
        )
    assert "Unknown topic config name: retention.ms" in exc.value.message
    assert "--topic-config retention.ms" in exc.value.hint
    assert all(c[4] for c in admin.created)  # nothing was created


def test_an_existing_target_is_compared_and_errors_refuse_the_run() -> None:
    target = {
        "retention.ms": Entry("-1", 1),
        "message.timestamp.before.max.ms": Entry(str(DAY), 1),
        "message.timestamp.type": Entry("LogAppendTime", 1),
        "max.message.bytes": Entry("1048588"),
    }
    admin = FakeAdmin(topics={"old": target})
    s = settings().model_copy(update={"data_first_ms": NOW - 10 * DAY, "data_last_ms": NOW})
    kw: dict[str, Any] = {"created": None, "preserve_timestamps": True, "now_ms": NOW}
    dry = check_configs(admin, s, "old", read_only=True, **kw)  # type: ignore[arg-type]
    assert {(d.name, d.source, d.target) for d in dry.diffs} >= {
        ("retention.ms", "172800000", "-1"),
        ("message.timestamp.type", None, "LogAppendTime"),
    }
    # LogAppendTime: the broker stamps the records, so the before-bound rejects nothing
    assert [(f.name, f.level) for f in dry.findings] == [("message.timestamp.type", "warning")]
    target["message.timestamp.type"] = Entry("CreateTime", 1)
    dry = check_configs(admin, s, "old", read_only=True, **kw)  # type: ignore[arg-type]
    assert [f.level for f in dry.errors] == ["error"]
    with pytest.raises(TargetConfigError) as exc:
        check_configs(admin, s, "old", read_only=False, **kw)  # type: ignore[arg-type]
    assert "message.timestamp.before.max.ms" in exc.value.message
    assert "--no-preserve-timestamps" in exc.value.hint


# -- the plan: the lookup time, and the request forms ----------------------------------------


class Source:
    def segments(self, cluster: str, topic: str, partition: int) -> list[PlannedSegment]:
        seg = PlannedSegment
        return [
            seg(key="a", base_offset=0, last_offset=9, size=1,
                first_timestamp=4000, max_timestamp=5500),
            seg(key="b", base_offset=10, last_offset=19, size=1,
                first_timestamp=5600, max_timestamp=7000),
        ]  # fmt: skip


def _plan(frm: str, **kw: Any) -> ReplayPlan:
    spec = ReplaySpec.model_validate(
        {
            "cluster": "east",
            "topic": "orders",
            "from": parse_position(frm),
            "target": TargetSpec(bootstrap_servers="t:9092"),
            "create_topic": True,
            **kw,
        }
    )
    part = PartitionPlan(
        partition=0, start_offset=12, end_offset=20, records=8, bytes=1, objects=[]
    )
    return ReplayPlan(
        replay_id="r", spec=spec, partitions=[part], source_partition_count=1, created_at_ms=0
    )


def test_the_history_is_asked_at_the_replays_start() -> None:
    history = StubHistory(HISTORY.states)
    got = plan_topic_settings(_plan("6500"), Source(), history).topic_settings  # type: ignore[arg-type]
    assert got is not None and history.asked == [6500] and got.source_partitions == 6
    assert (got.data_first_ms, got.data_last_ms) == (6500, 7000)
    # an offset start: the first replayed segment's first timestamp
    got = plan_topic_settings(_plan("offset:12"), Source(), history).topic_settings  # type: ignore[arg-type]
    assert got is not None and history.asked[-1] == 5600 and got.data_first_ms == 5600


def test_creation_options_need_create_topic() -> None:
    with pytest.raises(ValueError, match="add create_topic"):
        _plan("earliest", create_topic=False, topic_config={"retention.ms": "-1"})
    with pytest.raises(ValueError, match="add create_topic"):
        _plan("earliest", create_topic=False, source_config=False)
    params = {
        "cluster": "east",
        "topic": "orders",
        "from": "earliest",
        "target": "t:9092",
        "create_topic": True,
        "topic_config": {"retention.ms": "-1"},
        "no_source_config": True,
        "replication_factor": 2,
    }
    spec = spec_from_params(params)
    assert spec.topic_config == {"retention.ms": "-1"} and not spec.source_config
    assert spec.replication_factor == 2
    # without create_topic: one typed error (the CLI's usage error, the API's 400)
    with pytest.raises(ReplayConfigError, match="add create_topic"):
        spec_from_params({**params, "create_topic": False})
