"""Questions on-call engineers and replay planning ask the catalog (the Python API of
``kafka-archive catalog``).

* :func:`offsets_for_time` - ListOffsets for a moment of history: per partition the earliest
  offset whose timestamp is >= T (control records count, as on the broker), or -1. One indexed
  SQL query for all partitions (the first time-index interval whose running maximum timestamp
  is >= T), then at most **one ranged read of one interval** per partition to find the record.
  The broker answers from the first *segment* whose largest timestamp is >= T and gives -1 when
  no record of that segment qualifies (possible only when compaction left an emptied batch that
  kept its max timestamp); the catalog reproduces that too, still with at most one read.
* :func:`locate` - where an offset lives: object key, byte range of its batch, its timestamp.
* :func:`stats` - records and bytes per time bucket.
* :func:`gaps` - offsets missing from the archive, overlapping and divergent versions, corrupt
  segments.
* :func:`group_offsets` - a consumer group's committed offsets at a moment, from the
  ``__consumer_offsets`` history decoded from archived segments merged with the history the
  offsets follower read live (:mod:`kafka_archive.offsets_follower.follower`);
  :func:`group_commit_history` lists that merged history, each commit once.
* :func:`topics` - what the archive holds per topic and partition, :func:`clusters` per
  cluster (both in :mod:`kafka_archive.catalog.holdings`, which defines ``records``,
  ``offset_span`` and the problem counts every command shows).

Every answer type has ``to_json()`` giving the object the CLI prints with ``--json``; every
query raises :class:`CatalogQueryError` (:mod:`kafka_archive.catalog.query_errors`) when the
catalog cannot answer. The rooms: :mod:`~kafka_archive.catalog.queries.offsets` (offsets for a
time), :mod:`~kafka_archive.catalog.queries.locate`, :mod:`~kafka_archive.catalog.queries.stats`,
:mod:`~kafka_archive.catalog.queries.group_offsets` (group offsets and commit history) and
:mod:`~kafka_archive.catalog.queries.partitions` (the partitions a query names). This package
is the read side: it imports nothing of the build (:mod:`kafka_archive.catalog.build`) or of
extraction; the settings both sides agree on are in :mod:`kafka_archive.catalog.constants`.
The public API is re-exported here, lazily: a name is imported from its module when first
used (module ``__getattr__``), so ``catalog offsets`` loads the offsets room alone, not the
gaps, holdings, group and stats modules (CLI start-up, tests/test_cli_imports.py).
"""

from __future__ import annotations

import sys
from importlib import import_module
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafka_archive.catalog.gaps import GapEntry, gaps
    from kafka_archive.catalog.holdings import (
        ClusterHoldings,
        PartitionHoldings,
        clusters,
        topics,
    )
    from kafka_archive.catalog.queries.group_offsets import (
        GroupCommit,
        GroupOffset,
        group_commit_history,
        group_offsets,
        groups_by_topic,
    )
    from kafka_archive.catalog.queries.locate import Location, locate
    from kafka_archive.catalog.queries.offsets import (
        IntervalToRead,
        OffsetAnswer,
        offset_intervals,
        offsets_for_time,
    )
    from kafka_archive.catalog.queries.stats import StatsBucket, stats
    from kafka_archive.catalog.query_errors import CatalogQueryError

#: where each re-exported name lives
_HOMES = {
    "CatalogQueryError": "kafka_archive.catalog.query_errors",
    "ClusterHoldings": "kafka_archive.catalog.holdings",
    "GapEntry": "kafka_archive.catalog.gaps",
    "GroupCommit": "kafka_archive.catalog.queries.group_offsets",
    "GroupOffset": "kafka_archive.catalog.queries.group_offsets",
    "IntervalToRead": "kafka_archive.catalog.queries.offsets",
    "Location": "kafka_archive.catalog.queries.locate",
    "OffsetAnswer": "kafka_archive.catalog.queries.offsets",
    "PartitionHoldings": "kafka_archive.catalog.holdings",
    "StatsBucket": "kafka_archive.catalog.queries.stats",
    "clusters": "kafka_archive.catalog.holdings",
    "gaps": "kafka_archive.catalog.gaps",
    "group_commit_history": "kafka_archive.catalog.queries.group_offsets",
    "group_offsets": "kafka_archive.catalog.queries.group_offsets",
    "groups_by_topic": "kafka_archive.catalog.queries.group_offsets",
    "locate": "kafka_archive.catalog.queries.locate",
    "offset_intervals": "kafka_archive.catalog.queries.offsets",
    "offsets_for_time": "kafka_archive.catalog.queries.offsets",
    "stats": "kafka_archive.catalog.queries.stats",
    "topics": "kafka_archive.catalog.holdings",
}


def __getattr__(name: str) -> Any:
    """A re-exported name, imported from its module on first use (then cached here)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES))


class _Package(ModuleType):
    """This package's module type: importing a room binds it on the package under its own
    name (the import system does), and two rooms are named like the function they hold
    (``locate``, ``stats``). The binding is dropped so that ``queries.locate`` is always the
    function, as it was when this package imported every room eagerly."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _HOMES and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


__all__ = [
    "CatalogQueryError",
    "ClusterHoldings",
    "GapEntry",
    "GroupCommit",
    "GroupOffset",
    "IntervalToRead",
    "Location",
    "OffsetAnswer",
    "PartitionHoldings",
    "StatsBucket",
    "clusters",
    "gaps",
    "group_commit_history",
    "group_offsets",
    "groups_by_topic",
    "locate",
    "offset_intervals",
    "offsets_for_time",
    "stats",
    "topics",
]
