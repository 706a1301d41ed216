"""Translating a consumer group's positions from the source topic to a replay's target topic.

A group's position on a source partition ``p`` is a source offset ``S`` (the next record it will
read). A replay's offset map (:class:`~kafka_archive.replay.execution.progress.OffsetRange` rows)
says where each replayed source record landed. The group's position on a target partition ``q`` is
the target offset of the first record it has not consumed yet:

* for each source partition ``p`` feeding ``q``: the target offset of the first record of ``p``
  with source offset >= ``S`` (exact inside an exact range; the range's first target offset
  inside an inexact one, so records may be re-delivered but never skipped); if every record of
  ``p`` in ``q`` is below ``S``, one past the last of them;
* with ``same`` mapping ``q`` has one feeder; with hashed mappings several: the position is the
  minimum over them (nothing is lost; records of feeders that were further along may be read
  again).

Where ``S`` comes from:

* ``--at TIME``: the catalog's offsets-at-time of the source (ListOffsets semantics): the group
  starts with the first record at or after TIME, e.g. "the last 10 minutes" for a new group;
* otherwise the group's own commits in the archived ``__consumer_offsets`` (at an optional time),
  e.g. "fail over and carry on where the group was".

A source partition with no position (the group never committed there) starts at the replay's
first record. ``apply_positions`` commits the result on the target with a confluent-kafka
consumer; the group must have no active members (the broker refuses commits from outside an
active group's generation, and the error says so).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.errors import GroupTranslationError, ReplayTargetError
from kafka_archive.replay.execution.progress import OffsetRange
from kafka_archive.replay.planning.completeness import FINISHED_STATUSES
from kafka_archive.replay.planning.plan import PlanSource, ReplayPlan, TargetSpec
from kafka_archive.replay.target.clients import CLIENT_LOG_SETTINGS, new_client

__all__ = [
    "GroupOffsetsSource",
    "TargetPosition",
    "apply_positions",
    "find_replay",
    "move_target",
    "positions_at_time",
    "translate",
    "translate_group",
]


class GroupOffsetsSource(Protocol):
    """The catalog's decoded ``__consumer_offsets`` history."""

    def group_offsets(
        self, cluster: str, group: str, at_ms: int | None = None
    ) -> Mapping[tuple[str, int], int]:
        """``{(topic, partition): committed offset}`` of ``group`` at ``at_ms`` (None: latest)."""
        ...


@dataclass(frozen=True, slots=True)
class TargetPosition:
    """A group's position on one target partition and the source positions it came from."""

    topic: str
    partition: int
    offset: int
    exact: bool
    sources: dict[int, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "exact": self.exact,
            "source_positions": {str(k): v for k, v in sorted(self.sources.items())},
        }


def _candidate(ranges: list[OffsetRange], s: int) -> tuple[int, bool]:
    """Target offset of the first record (of one feeder) with source offset >= s."""
    lasts = [r.source_last for r in ranges]
    i = bisect_left(lasts, s)
    if i == len(ranges):
        return ranges[-1].target_last + 1, True
    r = ranges[i]
    if s <= r.source_first:
        return r.target_first, True
    if r.exact:
        return r.target_first + (s - r.source_first), True
    return r.target_first, False


def translate(
    ranges: Mapping[int, Iterable[OffsetRange]],
    positions: Mapping[int, int | None],
    target_topic: str,
) -> list[TargetPosition]:
    """Positions per target partition (see the module docstring).

    Args:
        ranges: source partition -> its offset ranges (any order).
        positions: source partition -> the group's source offset (None: from the start).
        target_topic: for the result.
    """
    feeders: dict[int, dict[int, list[OffsetRange]]] = {}
    for sp, rs in ranges.items():
        for r in rs:
            feeders.setdefault(r.target_partition, {}).setdefault(sp, []).append(r)
    out: list[TargetPosition] = []
    for q in sorted(feeders):
        best: int | None = None
        exact = True
        used: dict[int, int] = {}
        for sp, rs in sorted(feeders[q].items()):
            rs.sort(key=lambda r: r.source_first)
            s = positions.get(sp)
            cand, ok = (rs[0].target_first, True) if s is None else _candidate(rs, s)
            used[sp] = rs[0].source_first if s is None else s
            if best is None or cand < best:
                best = cand
            exact = exact and ok
        assert best is not None
        out.append(TargetPosition(target_topic, q, best, exact and len(feeders[q]) == 1, used))
    return out


def find_replay(
    ledger: ReplayLedger,
    cluster: str,
    topic: str,
    replay_id: str | None = None,
    target_topic: str | None = None,
) -> ReplayPlan:
    """The replay whose offset map to use: ``replay_id``, or the only finished replay of
    ``cluster/topic`` (into ``target_topic`` when given); ambiguity is an error naming the
    candidates."""
    if replay_id is not None:
        plan = ledger.plan(replay_id)
        if plan is None:
            raise GroupTranslationError(
                f"no replay {replay_id!r} in the catalog",
                hint="List replays with `kafka-archive replay status`.",
            )
        return plan
    runs = [
        r
        for r in ledger.runs(cluster=cluster, topic=topic)
        if r.status in FINISHED_STATUSES
        and (target_topic is None or r.target_topic == target_topic)
    ]
    if not runs:
        raise GroupTranslationError(
            f"no finished replay of {cluster}/{topic} in the catalog: there is no offset map",
            hint="Run `kafka-archive replay run` first (or pass --replay ID).",
        )
    if len(runs) > 1:
        ids = ", ".join(f"{r.replay_id} (-> {r.target_topic})" for r in runs)
        raise GroupTranslationError(
            f"several finished replays of {cluster}/{topic}: {ids}",
            hint="Choose one with --replay ID or --target-topic NAME.",
        )
    plan = ledger.plan(runs[0].replay_id)
    assert plan is not None
    return plan


def positions_at_time(plan: ReplayPlan, source: PlanSource, at_ms: int) -> dict[int, int | None]:
    """Source positions for ``--at TIME``: each partition's first offset at or after TIME."""
    out: dict[int, int | None] = {}
    for p in plan.partitions:
        found = source.offset_for_time(plan.spec.cluster, plan.spec.topic, p.partition, at_ms)
        out[p.partition] = p.end_offset if found < 0 else found
    return out


def translate_group(
    ledger: ReplayLedger,
    plan: ReplayPlan,
    positions: Mapping[int, int | None],
) -> list[TargetPosition]:
    """The group's target positions for ``plan`` given its source ``positions``."""
    ranges: dict[int, list[OffsetRange]] = {}
    for row in ledger.ranges(plan.replay_id):
        ranges.setdefault(row.source_partition, []).append(
            OffsetRange(
                target_partition=row.target_partition,
                source_first=row.source_first,
                source_last=row.source_last,
                target_first=row.target_first,
                target_last=row.target_last,
                count=row.count,
            )
        )
    if not ranges:
        raise GroupTranslationError(
            f"replay {plan.replay_id} has no offset map in the catalog (nothing replayed yet?)",
            hint="Check `kafka-archive replay status`.",
        )
    return translate(ranges, positions, plan.target_topic)


#: how long the target may take to describe the group before it counts as unreachable
TARGET_ANSWER_S = 15.0


def move_target(recorded: TargetSpec, overrides: Mapping[str, str] | None = None) -> TargetSpec:
    """The target a group is moved on: the replay's recorded target with ``overrides`` (the
    operator's settings, or those of an Airflow connection; a ``bootstrap.servers`` among them
    replaces the recorded servers).

    Raises:
        GroupTranslationError: the servers are still an Airflow connection's name (``missing``:
            ``bootstrap servers``, ``field``: ``target``), or secret settings the catalog does
            not store were not given (``missing``: ``target secrets``).
    """
    target = recorded.with_config(dict(overrides or {}))
    if target.recorded_as_connection():
        raise GroupTranslationError(
            f"the replay's target was recorded as {target.name!r}, the name of an Airflow "
            "connection, not as bootstrap servers",
            hint="give them with --target-config bootstrap.servers=HOST:PORT (CLI), or name "
            "that connection as the target (DAG, on-call page)",
            missing="bootstrap servers",
            field="target",
        )
    if any(v == "***" for v in target.config.values()):
        raise GroupTranslationError(
            "the target needs secret settings the catalog does not store",
            hint="give them with --target-config NAME=VALUE (CLI), or name an Airflow "
            "connection holding them as the target (DAG, on-call page)",
            missing="target secrets",
            field="target",
        )
    return target


def _unreachable(client_config: dict[str, str], group: str) -> ReplayTargetError:
    servers = client_config.get("bootstrap.servers", "")
    return ReplayTargetError(
        f"the target cluster {servers} did not answer within {TARGET_ANSWER_S:g} s: group "
        f"{group!r} was not moved",
        hint="check that the target is up and reachable from here and its settings "
        "(--target-config, or the Airflow connection), then run the same move again",
        field="target",
    )


_ACTIVE_GROUP_ERRORS = {
    KafkaError.UNKNOWN_MEMBER_ID,
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError.FENCED_INSTANCE_ID,
}


def _check_inactive(client_config: dict[str, str], group: str) -> None:
    from confluent_kafka.admin import AdminClient

    # librdkafka's log lines captured, not streamed (see .client_log); bad settings: clear error
    admin = new_client(AdminClient, {**CLIENT_LOG_SETTINGS, **client_config})
    try:
        fut = admin.describe_consumer_groups([group], request_timeout=TARGET_ANSWER_S)[group]
        desc = fut.result(TARGET_ANSWER_S + 5)
    except TimeoutError:  # nothing answered (a wrong address, a target that is down)
        raise _unreachable(client_config, group) from None
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if isinstance(err, KafkaError) and err.code() in (
            KafkaError._TIMED_OUT,
            KafkaError._TRANSPORT,
            KafkaError._ALL_BROKERS_DOWN,
            KafkaError._RESOLVE,
        ):
            raise _unreachable(client_config, group) from None
        return  # the broker cannot describe groups: the commit itself will tell
    except (ValueError, TypeError):
        return
    state = str(getattr(desc, "state", "")).upper()
    if desc.members or not any(s in state for s in ("EMPTY", "DEAD", "UNKNOWN")):
        raise GroupTranslationError(
            f"consumer group {group!r} is active on the target ({len(desc.members)} member(s), "
            f"state {state}): its positions cannot be changed under it",
            hint="Stop the group's consumers, then run translate-group --apply again.",
        )


def apply_positions(
    client_config: dict[str, str], group: str, positions: Iterable[TargetPosition]
) -> None:
    """Commit ``positions`` for ``group`` on the target (the group must be inactive)."""
    positions = list(positions)
    _check_inactive(client_config, group)
    consumer = new_client(
        Consumer,
        {
            **CLIENT_LOG_SETTINGS,
            **client_config,
            "group.id": group,
            "enable.auto.commit": False,
        },
    )
    try:
        result = consumer.commit(
            offsets=[TopicPartition(p.topic, p.partition, p.offset) for p in positions],
            asynchronous=False,
        )
    except KafkaException as exc:
        err = exc.args[0]
        if err.code() in _ACTIVE_GROUP_ERRORS:
            raise GroupTranslationError(
                f"consumer group {group!r} is active on the target: {err.str()}",
                hint="Stop the group's consumers, then run translate-group --apply again.",
            ) from None
        raise GroupTranslationError(
            f"committing offsets for {group!r} failed: {err.str()}"
        ) from None
    finally:
        consumer.close()
    failed = [tp for tp in (result or []) if tp.error is not None]
    if failed:
        first = failed[0].error
        assert first is not None
        if first.code() in _ACTIVE_GROUP_ERRORS:
            raise GroupTranslationError(
                f"consumer group {group!r} is active on the target: {first.str()}",
                hint="Stop the group's consumers, then run translate-group --apply again.",
            )
        raise GroupTranslationError(
            f"committing offsets for {group!r} failed on {len(failed)} partition(s): {first.str()}"
        )
