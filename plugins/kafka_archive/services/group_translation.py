"""Consumer-group translation as a service: where should group G start on a replay's target.

:class:`GroupTranslationService` answers "start group G at T on the target" and "move group G to
where it was, on the replayed topic": it finds the replay
(:func:`~kafka_archive.replay.group_translation. find_replay`), takes the group's source positions
(at a source time, or from its archived commits), maps them through the replay's offset map, and,
when asked, commits them on the target (the group must be inactive there). The CLI's ``replay
translate-group`` and the UI use it.

Errors: :class:`~kafka_archive.replay.errors.GroupTranslationError` (and the other
``ReplayError`` subclasses) with a hint, :class:`~kafka_archive.catalog.queries.
CatalogQueryError`, :class:`~kafka_archive.timeparse.TimeParseError` for a time that cannot be
read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_archive.services.replay import ReplayService

if TYPE_CHECKING:
    from kafka_archive.replay.group_translation import TargetPosition
    from kafka_archive.replay.planning.plan import ReplayPlan, TargetSpec

#: the settings of the target a group is moved on, given the replay's recorded target (an
#: Airflow task's: those of the connection it names); they win over the recorded ones
TargetResolver = Callable[["TargetSpec"], Mapping[str, str]]

__all__ = ["GroupTranslation", "GroupTranslationService", "TargetResolver"]


@dataclass(frozen=True)
class GroupTranslation:
    """The positions of ``group`` on the replay's target topic, and what they were based on;
    ``target``: where they are (or would be) committed, with the overrides applied."""

    group: str
    plan: ReplayPlan
    basis: str
    positions: list[TargetPosition]
    applied: bool
    target: TargetSpec

    def to_json(self) -> list[dict[str, Any]]:
        """One object per partition (the form ``translate-group --json`` prints)."""
        return [
            {
                "group": self.group,
                "replay_id": self.plan.replay_id,
                "applied": self.applied,
                **pos.to_dict(),
            }
            for pos in self.positions
        ]


class GroupTranslationService(ReplayService):
    """Group positions on replay targets (see the module docstring)."""

    def translate(
        self,
        cluster: str,
        topic: str,
        group: str,
        *,
        at_ms: int | None = None,
        commits_at_ms: int | None = None,
        replay_id: str | None = None,
        target_topic: str | None = None,
        apply: bool = False,
        target_config: Mapping[str, str] | None = None,
        target_resolver: TargetResolver | None = None,
    ) -> GroupTranslation:
        """Positions of ``group`` on the target of the replay of ``cluster/topic``.

        ``at_ms``: start the group at this source time; else the group's archived commits as
        of ``commits_at_ms`` (default: the latest). ``apply``: commit them on the target
        (:func:`~kafka_archive.replay.group_translation.move_target`): the replay's recorded
        target, with the settings of ``target_resolver`` (an Airflow connection's), then
        ``target_config`` (the operator's: secrets the catalog does not store, or
        ``bootstrap.servers``) over it.
        """
        from kafka_archive.catalog.queries import group_offsets
        from kafka_archive.replay.errors import GroupTranslationError
        from kafka_archive.replay.group_translation import (
            apply_positions,
            find_replay,
            move_target,
            positions_at_time,
            translate_group,
        )
        from kafka_archive.timeparse import format_ms

        plan = find_replay(self.ledger, cluster, topic, replay_id, target_topic)
        source_positions: Mapping[int, int | None]
        if at_ms is not None:
            source_positions = positions_at_time(plan, self.source(), at_ms)
            basis = f"source time {format_ms(at_ms)}"
        else:
            commits = group_offsets(self.resources.catalog(), cluster, group, commits_at_ms)
            source_positions = {g.partition: g.offset for g in commits if g.topic == topic}
            if not source_positions:
                raise GroupTranslationError(
                    f"the archive holds no commits of group {group!r} on {cluster}/{topic}",
                    hint="use --at TIME to start the group at a moment instead",
                )
            basis = "the group's archived commits"
        positions = translate_group(self.ledger, plan, dict(source_positions))
        overrides = {**(target_resolver(plan.spec.target) if target_resolver else {})}
        overrides.update(target_config or {})
        target = plan.spec.target.with_config(overrides)
        if apply:
            target = move_target(plan.spec.target, overrides)
            apply_positions(target.client_config(), group, positions)
        return GroupTranslation(group, plan, basis, positions, apply, target)
