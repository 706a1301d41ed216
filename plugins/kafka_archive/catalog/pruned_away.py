"""What to say about a topic whose archived data a retention policy pruned away entirely.

After a prune removed every retained segment of a topic, the catalog still knows the topic
(its ``partitions`` rows, segments marked ``pruned``) and why it is empty (``pruned_ranges``).
Readers that find nothing to serve (replay and export planning) ask :func:`pruned_away_reason`
before answering "the catalog holds no topic": the answer names the policy, when, and up to
which offsets, and says what that means (the records are gone; a catalog build brings nothing
back).
"""

from __future__ import annotations

from sqlalchemy import func, select

from kafka_archive.catalog.db import Catalog
from kafka_archive.catalog.tables import pruned_ranges
from kafka_archive.timeparse import format_ms

__all__ = ["PRUNED_AWAY_HINT", "pruned_away_reason"]

PRUNED_AWAY_HINT = (
    "The records were deleted from the archive on purpose by that retention policy (see "
    "`kafka-archive catalog gaps`); they cannot be replayed or exported, and a catalog build "
    "does not bring them back. Data archived from now on is served again; to keep a topic "
    "longer, change its policy (keep_all, a larger max_age or max_bytes)."
)


def pruned_away_reason(catalog: Catalog, cluster: str, topic: str) -> str | None:
    """A sentence saying that retention pruned all of ``cluster/topic`` (policy, when, the
    offsets per partition), or ``None`` when nothing of it was ever pruned."""
    pr = pruned_ranges.c
    with catalog.engine.connect() as conn:
        rows = conn.execute(
            select(
                pr.partition,
                func.max(pr.last_offset),
                func.max(pr.pruned_at_ms),
                func.max(pr.policy),
                func.count(func.distinct(pr.policy)),
            )
            .where(pr.cluster == cluster, pr.topic == topic)
            .group_by(pr.partition)
            .order_by(pr.partition)
        ).all()
    if not rows:
        return None
    policies = sorted({str(r[3]) for r in rows})
    when = max((int(r[2]) for r in rows if r[2] is not None), default=None)
    offsets = ", ".join(f"partition {int(r[0])} up to offset {int(r[1])}" for r in rows)
    at = f"at {format_ms(when)}" if when is not None else "(the prune is unfinished)"
    names = " and ".join(policies)
    return (
        f"the archive holds no retained data of {topic!r} of cluster {cluster!r}: retention "
        f"policy {names} pruned all of it {at} ({offsets})"
    )
