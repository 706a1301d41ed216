"""The canonical chain of a partition, and how archived versions relate (pure functions).

The archive may hold the same offsets more than once:

* **log compaction** rewrites a segment (same base offset, fewer records, new bytes) and may
  merge several segments into one; each rewrite is archived as a new version;
* **replicas**: the archive takes each offset range once, but replicas roll segments at
  different offsets, so a segment from one broker can overlap one from another;
* **unclean leader election**: two replicas hold *different* records at the same offsets.

The catalog answers from one **canonical chain** per partition: disjoint offset ranges
("pieces"), each served by one version. The rule (:func:`compute_pieces`): versions are taken
in order of precedence - **earliest archived first** (an earlier version of a compacted segment
still holds every record; compaction only removes), then the one spanning more offsets, then
the lower broker id, then the manifest key (a total, deterministic order). Each version claims
the offsets of its range ``[first_offset, last_offset]`` that no version before it claimed.
Adding versions can only shrink the claims of existing ones, never grow them, so a catalog
built incrementally converges to the same chain as one built at once, whatever the arrival
order.

Divergence (:func:`find_overlaps`) is judged by leader epochs, as Kafka does: replicas and
compaction rewrites keep each batch's ``partitionLeaderEpoch``, so two versions holding a
common offset under *different* epochs diverge (only an unclean leader election produces that).
The chain still serves the earliest-archived version there; ``catalog gaps`` reports it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

__all__ = [
    "Hole",
    "Overlap",
    "Version",
    "compute_pieces",
    "find_holes",
    "find_overlaps",
    "running_max",
]


class Version(NamedTuple):
    """What the chain needs to know of one archived segment version.

    ``first_offset``/``last_offset`` are -1 for a version holding no batch.
    """

    key: int
    first_offset: int
    last_offset: int
    archived_at_ms: int
    broker_id: int
    manifest_key: str
    base_offset: int = -1
    end_offset: int = -1
    epoch_runs: tuple[tuple[int, int, int], ...] = ()

    @property
    def is_empty(self) -> bool:
        return self.first_offset < 0 or self.last_offset < self.first_offset


def precedence(v: Version) -> tuple[int, int, int, str]:
    """Sort key: earliest archived, then widest, then lowest broker id, then manifest key."""
    return (v.archived_at_ms, -(v.last_offset - v.first_offset), v.broker_id, v.manifest_key)


def compute_pieces(versions: Iterable[Version]) -> dict[int, list[tuple[int, int]]]:
    """The chain: for each version key, the offset ranges ``(lo, hi)`` it serves (maybe none).

    See the module docstring for the precedence rule. The result's ranges are disjoint across
    all versions and each version's list is in offset order.
    """
    claimed_lo: list[int] = []  # starts of disjoint claimed ranges, sorted
    claimed_hi: list[int] = []  # their ends (inclusive)
    out: dict[int, list[tuple[int, int]]] = {}
    for v in sorted(versions, key=precedence):
        out[v.key] = []
        if v.is_empty:
            continue
        lo, hi = v.first_offset, v.last_offset
        # claimed ranges that may intersect [lo, hi]: from the last one starting <= lo
        i = max(bisect.bisect_right(claimed_lo, lo) - 1, 0)
        cursor = lo
        free: list[tuple[int, int]] = []
        while i < len(claimed_lo) and claimed_lo[i] <= hi:
            c_lo, c_hi = claimed_lo[i], claimed_hi[i]
            if c_hi >= cursor:
                if c_lo > cursor:
                    free.append((cursor, c_lo - 1))
                cursor = c_hi + 1
            i += 1
        if cursor <= hi:
            free.append((cursor, hi))
        out[v.key] = free
        for f_lo, f_hi in free:
            j = bisect.bisect_left(claimed_lo, f_lo)
            claimed_lo.insert(j, f_lo)
            claimed_hi.insert(j, f_hi)
    return out


def running_max(prev: int, values: Sequence[int]) -> list[int]:
    """Running maximum of ``values`` starting from ``prev``."""
    out = []
    cur = prev
    for v in values:
        if v > cur:
            cur = v
        out.append(cur)
    return out


@dataclass(frozen=True, slots=True)
class Overlap:
    """Two versions holding common offsets ``lo..hi``; ``divergent`` when some common offset
    is under different leader epochs (``epoch_a`` / ``epoch_b`` are the first such pair)."""

    a: int
    b: int
    lo: int
    hi: int
    divergent: bool
    first_divergent_offset: int = -1
    epoch_a: int = -1
    epoch_b: int = -1


def _divergence(
    a: Sequence[tuple[int, int, int]], b: Sequence[tuple[int, int, int]], lo: int, hi: int
) -> tuple[int, int, int] | None:
    """The first offset in ``lo..hi`` where runs of ``a`` and ``b`` disagree on the epoch."""
    best: tuple[int, int, int] | None = None
    for ea, a_lo, a_hi in a:
        if a_hi < lo or a_lo > hi or ea < 0:
            continue
        for eb, b_lo, b_hi in b:
            if b_hi < lo or b_lo > hi or eb < 0 or eb == ea:
                continue
            start = max(a_lo, b_lo, lo)
            if start <= min(a_hi, b_hi, hi) and (best is None or start < best[0]):
                best = (start, ea, eb)
    return best


def find_overlaps(versions: Iterable[Version]) -> list[Overlap]:
    """Every pair of versions whose offset ranges intersect, in offset order."""
    vs = sorted((v for v in versions if not v.is_empty), key=lambda v: (v.first_offset, v.key))
    out: list[Overlap] = []
    active: list[Version] = []
    for v in vs:
        active = [a for a in active if a.last_offset >= v.first_offset]
        for a in active:
            lo, hi = v.first_offset, min(a.last_offset, v.last_offset)
            d = _divergence(a.epoch_runs, v.epoch_runs, lo, hi)
            if d is None:
                out.append(Overlap(a.key, v.key, lo, hi, False))
            else:
                out.append(Overlap(a.key, v.key, lo, hi, True, d[0], d[1], d[2]))
        active.append(v)
    return out


@dataclass(frozen=True, slots=True)
class Hole:
    """Offsets ``lo..hi`` that no archived version covers, between ``after`` and ``before``
    (version keys; -1 at either end)."""

    lo: int
    hi: int
    after: int
    before: int


def find_holes(versions: Iterable[Version]) -> list[Hole]:
    """Offset ranges inside the archived span that no version covers.

    A version covers ``[base_offset, end_offset)`` (its file name to the next segment's base
    offset, as the manifest recorded them), or ``[base_offset, last_offset]`` when the end is
    unknown: offsets inside a segment's range that no batch holds were removed by compaction,
    not lost. Offsets before the first archived version are not reported (the archive starts
    somewhere).
    """
    spans = sorted(
        (
            min(v.base_offset, v.first_offset) if v.base_offset >= 0 else v.first_offset,
            max(v.last_offset, v.end_offset - 1),
            v.key,
        )
        for v in versions
        if not v.is_empty
    )
    holes: list[Hole] = []
    reach = -1
    reach_key = -1
    for lo, hi, key in spans:
        if reach >= 0 and lo > reach + 1:
            holes.append(Hole(reach + 1, lo - 1, reach_key, key))
        if hi > reach:
            reach, reach_key = hi, key
    return holes
