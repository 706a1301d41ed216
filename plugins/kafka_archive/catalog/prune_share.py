"""How much of a topic one prune deletes, and the guard that asks before deleting a lot of it.

A typo in a policy (``max_bytes: 1KiB`` for ``1TiB``, a pattern matching more than meant) must
not empty years of archive in one run. So a prune measures, per topic, the share of the
topic's retained bytes (the ``.log`` bytes of every retained version, as ``max_bytes``
counts them) its plan deletes (:class:`TopicShare`), and when any topic's share is above the
limit (the ``prune_max_share`` setting, a percentage) it deletes nothing and raises
:class:`PruneNeedsConfirmation` naming the topics, unless the run was confirmed (``archive
prune --yes``, the prune DAG's Param ``yes``). A dry run reports the shares and which would
need confirmation, and never raises.

Pure: shares in, a verdict out; :mod:`kafka_archive.catalog.prune` measures and acts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from kafka_archive.errors import KafkaArchiveError

__all__ = ["PruneNeedsConfirmation", "TopicShare", "over_limit"]


@dataclass(frozen=True, slots=True)
class TopicShare:
    """What one prune deletes of one topic: ``pruned_bytes`` of its ``total_bytes`` (the
    ``.log`` bytes of its retained versions before the prune), under ``policy``."""

    cluster: str
    topic: str
    policy: str
    pruned_bytes: int
    total_bytes: int

    @property
    def percent(self) -> float:
        """The share deleted, in percent (0 for an empty topic)."""
        return 100.0 * self.pruned_bytes / self.total_bytes if self.total_bytes else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "percent": round(self.percent, 1)}


def over_limit(shares: Sequence[TopicShare], max_percent: int | None) -> list[TopicShare]:
    """The topics whose share is above ``max_percent`` (``None``: no limit, none)."""
    if max_percent is None or max_percent >= 100:
        return []
    return [s for s in shares if s.pruned_bytes and s.percent > max_percent]


class PruneNeedsConfirmation(KafkaArchiveError):
    """The prune would delete more than ``max_percent`` of some topics: nothing was deleted.

    ``topics`` are the shares above the limit; the message names each with its policy and
    share; ``hint`` says how to confirm or raise the limit."""

    def __init__(self, topics: Sequence[TopicShare], max_percent: int) -> None:
        self.topics = list(topics)
        self.max_percent = max_percent
        listed = "; ".join(
            f"{t.cluster}/{t.topic} {t.percent:.1f}% (policy {t.policy})" for t in self.topics
        )
        super().__init__(
            f"this prune would delete more than {max_percent}% of {len(self.topics)} "
            f"topic(s): {listed}; nothing was deleted",
            hint="check the policy with `kafka-archive archive prune --dry-run`, then confirm "
            "with `archive prune --yes` (the prune DAG: trigger it with the Param yes: true), or "
            "raise the prune_max_share setting (100: never ask)",
        )
