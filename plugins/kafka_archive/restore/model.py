"""A restore's plan and report, as ``restore plan --json`` / ``restore run --json`` print them,
the DAG run keeps them and the on-call API returns them.

:class:`RestorePlan` is the preflight's answer: every topic with its target name, replay id,
partitions, records, bytes, holes and configs at T; the groups and ACLs it moves; every
:class:`Problem` found, all at once, each with what to do (``ok`` is False while one of them is
an ``error``); the estimate of bytes and time. :class:`RestoreReport` is what a run did: per
topic and partition records, bytes and time, per group the positions applied, the ACLs created,
the recovery point (per partition, the time of the last archived record: what a restore "now"
would lose) and the restore's duration.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kafka_archive.frozen import FrozenModel
from kafka_archive.restore.acls import AclRule, SkippedAcl

__all__ = [
    "ESTIMATE_BYTES_PER_S",
    "GroupEntry",
    "GroupResult",
    "Problem",
    "RestorePlan",
    "RestoreReport",
    "TopicEntry",
    "TopicResult",
]

#: the rate the time estimate assumes (a restore's batch path on a small cluster moves more;
#: a throttled or distant target less): the estimate is an order of magnitude, said as such
ESTIMATE_BYTES_PER_S = 50 * 1024 * 1024


class Problem(FrozenModel):
    """Something the preflight found: ``error`` stops the restore, ``warning`` does not."""

    level: Literal["error", "warning"]
    code: str
    message: str
    hint: str = ""
    topic: str | None = None


class TopicEntry(FrozenModel):
    """One topic of the plan."""

    source: str
    target: str
    replay_id: str | None = None
    #: the replay already exists, or the topic has nothing before T and this restore ran
    #: before (it created it): its topic is no collision
    resumed: bool = False
    partitions: int = 0
    #: the source's partition count at T (``None``: the history does not say)
    partitions_at_t: int | None = None
    replication_factor: int | None = None
    records: int = 0
    bytes: int = 0
    #: the source's config overrides at T, and those the target is created with
    configs_at_t: dict[str, str] = Field(default_factory=dict)
    configs: dict[str, str] = Field(default_factory=dict)
    dropped_configs: list[dict[str, Any]] = Field(default_factory=list)
    holes: list[dict[str, Any]] = Field(default_factory=list)
    #: per partition, the time of the last archived record (the recovery point)
    recovery_point_ms: dict[int, int] = Field(default_factory=dict)
    #: nothing to replay before T (the topic is still created as it was at T when it existed)
    empty: bool = False
    notes: list[str] = Field(default_factory=list)


class GroupEntry(FrozenModel):
    """One consumer group of the plan: the selected topics it committed on, and the others."""

    group: str
    topics: list[str]
    outside: list[str] = Field(default_factory=list)


class RestorePlan(FrozenModel):
    """The preflight's answer (see the module docstring)."""

    restore_id: str
    cluster: str
    at_ms: int
    at: str
    target: str
    target_cluster_id: str | None = None
    target_brokers: int = 0
    principal: str | None = None
    topics: list[TopicEntry]
    groups: list[GroupEntry] = Field(default_factory=list)
    acls: list[AclRule] = Field(default_factory=list)
    skipped_acls: list[SkippedAcl] = Field(default_factory=list)
    #: what the restore needs on the target, each checked
    permissions: list[dict[str, Any]] = Field(default_factory=list)
    problems: list[Problem] = Field(default_factory=list)
    estimate: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(p.level == "error" for p in self.problems)

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.level == "error"]

    def to_json(self) -> dict[str, Any]:
        return {"kind": "restore_plan", "ok": self.ok, **self.model_dump(mode="json")}


class TopicResult(FrozenModel):
    """What the run did for one topic (its replay's report, summarised)."""

    source: str
    target: str
    replay_id: str | None
    status: str
    records: int = 0
    records_this_run: int = 0
    bytes_this_run: int = 0
    duration_s: float = 0.0
    partitions: dict[int, dict[str, Any]] = Field(default_factory=dict)
    topic_config: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class GroupResult(FrozenModel):
    """One group's translated positions and whether they were committed on the target."""

    group: str
    applied: bool
    positions: list[dict[str, Any]] = Field(default_factory=list)
    outside: list[str] = Field(default_factory=list)
    error: str | None = None


class RestoreReport(FrozenModel):
    """What a restore run did (see the module docstring)."""

    restore_id: str
    status: str
    cluster: str
    at_ms: int
    at: str
    target: str
    started_at_ms: int
    finished_at_ms: int
    duration_s: float
    records_this_run: int = 0
    bytes_this_run: int = 0
    topics: list[TopicResult] = Field(default_factory=list)
    groups: list[GroupResult] = Field(default_factory=list)
    acls_created: int = 0
    acl_errors: list[str] = Field(default_factory=list)
    #: ``{topic: {partition: ms}}``: the last archived record's time per partition
    recovery_point_ms: dict[str, dict[int, int]] = Field(default_factory=dict)
    problems: list[Problem] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"kind": "restore_report", **self.model_dump(mode="json")}
