"""Consumer groups in a restore, and the rules of a restore's end (pure but for the one
commit of a group's positions on the target).

:func:`apply_group`: a group's committed positions at T on its selected topics (the catalog's
``__consumer_offsets`` history), translated through those topics' replays' offset maps
(:func:`~kafka_archive.replay.group_translation.translate_group`) and committed on the target
(:func:`~kafka_archive.replay.group_translation.apply_positions`: the group must be inactive
there). Partitions the group had not committed on stay uncommitted, as on the source; a group
whose topics' data is not in yet is not touched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.restore.model import GroupEntry, GroupResult, TopicResult
from kafka_archive.restore.request import RestoreRequest

__all__ = ["DONE", "apply_group", "restore_status", "set_after_data"]

#: what a topic's replay ended with that counts as its data being in
DONE = frozenset({"complete", "complete-with-gaps", "already-done", "done", "nothing-before-t"})


def apply_group(
    catalog: Any,
    ledger: Any,
    request: RestoreRequest,
    group: GroupEntry,
    done: Mapping[str, bool],
    replay_ids: Mapping[str, str | None],
) -> GroupResult:
    """Translate and commit ``group``'s positions at T (see the module docstring);
    ``done``: topic -> its data is in; ``replay_ids``: topic -> its replay (``None``: nothing
    was replayed). Errors are the result's ``error``, never raised."""
    from kafka_archive.catalog.queries import group_offsets
    from kafka_archive.replay.group_translation import apply_positions, translate_group

    not_in = [t for t in group.topics if not done.get(t)]
    if not_in:
        return GroupResult(
            group=group.group,
            applied=False,
            outside=group.outside,
            error=f"the data of {', '.join(not_in)} is not in",
        )
    positions = []
    try:
        commits = group_offsets(catalog, request.cluster, group.group, request.at_ms)
        for topic in group.topics:
            rid = replay_ids.get(topic)
            mine = {c.partition: c.offset for c in commits if c.topic == topic}
            plan = ledger.plan(rid) if rid else None
            if plan is None or not mine:
                continue
            translated = translate_group(ledger, plan, mine)
            positions += [p for p in translated if set(p.sources) <= set(mine)]
        if positions:
            apply_positions(request.target.client_config(), group.group, positions)
    except KafkaArchiveError as exc:
        return GroupResult(
            group=group.group, applied=False, outside=group.outside, error=exc.message
        )
    return GroupResult(
        group=group.group,
        applied=bool(positions),
        outside=group.outside,
        positions=[p.to_dict() for p in positions],
    )


def set_after_data(configs: dict[str, str]) -> dict[str, str]:
    """The configs of T that are set on a restored topic only once its data is in: a
    LogAppendTime topic is created CreateTime (the broker would otherwise stamp every restored
    record with the time of the restore) and switched when its replay is complete."""
    if configs.get("message.timestamp.type") == "LogAppendTime":
        return {"message.timestamp.type": "LogAppendTime"}
    return {}


def restore_status(
    results: list[TopicResult], groups: list[GroupResult], acl_errors: list[str]
) -> str:
    if any(r.status not in DONE for r in results) or any(g.error for g in groups) or acl_errors:
        return "failed"
    if any(r.status == "complete-with-gaps" for r in results):
        return "complete-with-gaps"
    return "complete"
