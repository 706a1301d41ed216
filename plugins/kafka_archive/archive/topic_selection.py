"""Which topics an archive run reads: ``--topics`` (CLI) / ``topics`` (a cluster's entry in the
archive config).

Patterns are shell-style globs matched case-sensitively against the whole topic name
(:func:`fnmatch.fnmatchcase`: ``orders``, ``orders-*``, ``[a-c]*``), as the retention policies'
topic patterns are (:mod:`kafka_archive.catalog.retention`); a topic is selected when any
pattern matches. No pattern: every topic, as before.

The cluster's own state is archived whatever the selection: ``__consumer_offsets`` (what group
translation and ``catalog offsets`` of groups read) and ``__cluster_metadata`` (topic configs,
ACLs, the metadata history; its snapshots go with it). The selection is applied by name, before
a partition directory is opened: an unselected partition's files are never listed, read or
hashed, and no manifest of it is listed in the store.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Final

__all__ = ["ALWAYS_ARCHIVED", "TopicSelection"]

#: internal topics archived whatever the selection (see the module docstring)
ALWAYS_ARCHIVED: Final = frozenset({"__consumer_offsets", "__cluster_metadata"})


class TopicSelection:
    """The topics of a run: ``patterns`` (globs); empty selects every topic."""

    __slots__ = ("patterns",)

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        self.patterns = tuple(p for p in patterns if p)

    def __bool__(self) -> bool:
        """Whether this selects only some topics."""
        return bool(self.patterns)

    def selects(self, topic: str) -> bool:
        """Whether ``topic``'s partitions are archived (by the disk archiver)."""
        if not self.patterns or topic in ALWAYS_ARCHIVED:
            return True
        return self.matches(topic)

    def matches(self, topic: str) -> bool:
        """Whether a pattern matches ``topic`` (no internal-topic rule: the fetch archiver
        has its own, :func:`kafka_archive.archive.fetch.runner.run_fetch_archive`)."""
        return any(fnmatch.fnmatchcase(topic, p) for p in self.patterns)
