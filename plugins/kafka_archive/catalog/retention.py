"""Retention policies and what they select: which archived segments a prune may delete.

A **policy** (:class:`RetentionPolicy`) has a name and applies to the topics its ``cluster``
and ``topic`` glob patterns match (the first matching policy of the list wins; a topic no
policy matches is kept whole). It keeps data by age (``max_age``: delete what is older),
by total size (``max_bytes``: delete the oldest until the topic fits), both (delete what
either says), or ``keep_all``. Policies come from the ``retention`` setting
(:mod:`kafka_archive.settings`): a YAML list in the configuration file, JSON in
``KAFKA_ARCHIVE_RETENTION``::

    retention:
      - {name: orders-90d, cluster: prod, topic: "orders*", max_age: 90d}
      - {name: audit-forever, topic: "audit.*", keep_all: true}
      - {name: default-2tib, max_bytes: 2TiB}

**Units.** A prune deletes whole segments, oldest first, and every archived version of the
same offsets together (replicas rolled at other points, versions left by compaction
rewrites): a **unit** (:class:`Unit`) is a maximal run of versions whose offset spans
(``[base_offset, end_offset)``, and the offsets they hold) overlap, so that cutting between
two units never leaves a version that holds offsets on both sides. A partition's units are
deleted as a prefix: a unit goes only when every older unit goes too.

* **age**: a unit is old when its newest record (``max_timestamp``, else when it was
  archived) is older than ``now - max_age``; the partition's prefix of old units goes.
* **size**: the topic's size is the sum of the ``.log`` bytes of its retained versions
  (every version counts: a compaction rewrite costs its own bytes); while it exceeds
  ``max_bytes``, the oldest next unit of any partition goes.
* a unit that a live lease (:mod:`kafka_archive.catalog.leases`) touches stops its
  partition's prefix: neither it nor any later unit of the partition goes in this run.

Everything here is pure (rows in, selections out); :mod:`kafka_archive.catalog.prune` reads
the catalog and acts.
"""

from __future__ import annotations

import fnmatch
import heapq
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from kafka_archive.errors import KafkaArchiveError

__all__ = [
    "RetentionConfigError",
    "RetentionPolicy",
    "Unit",
    "VersionSpan",
    "load_policies",
    "parse_bytes",
    "parse_duration_ms",
    "policy_for",
    "select_units",
    "units_of",
]

_DURATION_RE: Final = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d|w)\s*$")
_DURATION_MS: Final = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_MS["w"] = 7 * _DURATION_MS["d"]
_BYTES_RE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]i?B|B)?\s*$", re.I)
_BYTES_UNIT: Final = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
    "PIB": 2**50,
}


class RetentionConfigError(KafkaArchiveError, ValueError):
    """The ``retention`` setting is not a valid list of policies (the message says which
    entry and why)."""

    default_hint = (
        "retention is a list of {name, cluster, topic, max_age | max_bytes | keep_all}, "
        'e.g. [{"name": "30-days", "topic": "*", "max_age": "30d"}] (see docs/archive.md)'
    )


def parse_duration_ms(value: str | int) -> int:
    """``30d``, ``12h``, ``90m``, ``45s``, ``500ms``, ``2w`` or an integer of milliseconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"a duration must be positive, not {value}")
        return value
    m = _DURATION_RE.match(str(value))
    if m is None:
        raise ValueError(f"{value!r} is not a duration (e.g. 30d, 12h, 90m, 2w)")
    ms = int(m[1]) * _DURATION_MS[m[2]]
    if ms <= 0:
        raise ValueError(f"a duration must be positive, not {value!r}")
    return ms


def parse_bytes(value: str | int) -> int:
    """``500GiB``, ``2TB``, ``1048576`` (bytes)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value <= 0:
            raise ValueError(f"a size must be positive, not {value}")
        return value
    m = _BYTES_RE.match(str(value))
    if m is None:
        raise ValueError(f"{value!r} is not a size (e.g. 500GiB, 2TB, 1048576)")
    n = int(float(m[1]) * _BYTES_UNIT[(m[2] or "B").upper()])
    if n <= 0:
        raise ValueError(f"a size must be positive, not {value!r}")
    return n


class RetentionPolicy(BaseModel):
    """One named policy and the topics it applies to (glob patterns, ``*`` by default)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=200)
    cluster: str = "*"
    topic: str = "*"
    max_age: str | int | None = None
    max_bytes: str | int | None = None
    keep_all: bool = False

    @field_validator("max_age")
    @classmethod
    def _age(cls, v: str | int | None) -> str | int | None:
        if v is not None:
            parse_duration_ms(v)
        return v

    @field_validator("max_bytes")
    @classmethod
    def _size(cls, v: str | int | None) -> str | int | None:
        if v is not None:
            parse_bytes(v)
        return v

    @model_validator(mode="after")
    def _one_rule(self) -> RetentionPolicy:
        limited = self.max_age is not None or self.max_bytes is not None
        if self.keep_all and limited:
            raise ValueError("keep_all cannot be combined with max_age or max_bytes")
        if not self.keep_all and not limited:
            raise ValueError("give max_age, max_bytes (or both), or keep_all: true")
        return self

    @property
    def max_age_ms(self) -> int | None:
        return None if self.max_age is None else parse_duration_ms(self.max_age)

    @property
    def max_size(self) -> int | None:
        return None if self.max_bytes is None else parse_bytes(self.max_bytes)

    def matches(self, cluster: str, topic: str) -> bool:
        return fnmatch.fnmatchcase(cluster, self.cluster) and fnmatch.fnmatchcase(topic, self.topic)

    def describe(self) -> str:
        """``max_age 30d``, ``max_bytes 2TiB``, ``max_age 7d or max_bytes 1GiB``, ``keep_all``."""
        if self.keep_all:
            return "keep_all"
        rules = []
        if self.max_age is not None:
            rules.append(f"max_age {self.max_age}")
        if self.max_bytes is not None:
            rules.append(f"max_bytes {self.max_bytes}")
        return " or ".join(rules)


def load_policies(raw: Any) -> list[RetentionPolicy]:
    """The policies of the ``retention`` setting (``None``: none, everything is kept).

    Raises:
        RetentionConfigError: not a list, an invalid entry, or two policies with one name.
    """
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RetentionConfigError(
            f"retention must be a list of policies, not {type(raw).__name__}"
        )
    out: list[RetentionPolicy] = []
    for i, entry in enumerate(raw):
        try:
            policy = RetentionPolicy.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "entry"
            name = entry.get("name") if isinstance(entry, Mapping) else None
            label = f"retention[{i}]" + (f" ({name})" if name else "")
            raise RetentionConfigError(f"{label}: {where}: {first['msg']}") from None
        if any(p.name == policy.name for p in out):
            raise RetentionConfigError(f"retention[{i}]: a second policy named {policy.name!r}")
        out.append(policy)
    return out


def policy_for(
    policies: Sequence[RetentionPolicy], cluster: str, topic: str
) -> RetentionPolicy | None:
    """The first policy matching ``cluster``/``topic`` (``None``: keep everything)."""
    return next((p for p in policies if p.matches(cluster, topic)), None)


@dataclass(frozen=True, slots=True)
class VersionSpan:
    """What selection needs of one retained segment version (a catalog ``segments`` row)."""

    segment_id: int
    base_offset: int
    end_offset: int  # exclusive, -1 unknown
    first_offset: int  # -1: no batch
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    archived_at_ms: int
    size_bytes: int

    @property
    def lo(self) -> int:
        return (
            self.base_offset if self.first_offset < 0 else min(self.base_offset, self.first_offset)
        )

    @property
    def hi(self) -> int:
        return max(self.last_offset, self.end_offset - 1, self.base_offset)

    @property
    def newest_ms(self) -> int:
        return self.max_timestamp if self.max_timestamp >= 0 else self.archived_at_ms


@dataclass(slots=True)
class Unit:
    """Versions of one partition deleted together: offsets ``first_offset..last_offset``."""

    partition: int
    versions: list[VersionSpan] = field(default_factory=list)

    @property
    def first_offset(self) -> int:
        return min(v.lo for v in self.versions)

    @property
    def last_offset(self) -> int:
        return max(v.hi for v in self.versions)

    @property
    def newest_ms(self) -> int:
        return max(v.newest_ms for v in self.versions)

    @property
    def log_bytes(self) -> int:
        return sum(v.size_bytes for v in self.versions)

    @property
    def first_timestamp(self) -> int:
        ts = [v.first_timestamp for v in self.versions if v.first_timestamp >= 0]
        return min(ts, default=-1)

    @property
    def max_timestamp(self) -> int:
        return max((v.max_timestamp for v in self.versions), default=-1)


def units_of(partition: int, versions: Iterable[VersionSpan]) -> list[Unit]:
    """The partition's units in offset order (module docstring)."""
    out: list[Unit] = []
    reach = -2
    for v in sorted(versions, key=lambda v: (v.lo, v.hi, v.segment_id)):
        if out and v.lo <= reach:
            out[-1].versions.append(v)
            reach = max(reach, v.hi)
        else:
            out.append(Unit(partition, [v]))
            reach = v.hi
    return out


def _blocked(unit: Unit, leased: Sequence[tuple[int, int]]) -> bool:
    return any(lo <= unit.last_offset and unit.first_offset <= hi for lo, hi in leased)


def select_units(
    policy: RetentionPolicy,
    units: Mapping[int, Sequence[Unit]],
    *,
    now_ms: int,
    leased: Mapping[int, Sequence[tuple[int, int]]] | None = None,
) -> tuple[dict[int, list[Unit]], dict[int, Unit]]:
    """What ``policy`` deletes from one topic: per partition, a prefix of its ``units``.

    ``leased``: per partition, the inclusive offset ranges of live leases. Returns the
    selected prefixes and, per partition, the unit a lease kept (the policy would have
    deleted it and what follows it).
    """
    leased = leased or {}
    chosen: dict[int, list[Unit]] = {p: [] for p in units}
    held: dict[int, Unit] = {}
    if policy.keep_all:
        return {}, {}
    nxt = dict.fromkeys(units, 0)

    def take(p: int) -> bool:
        u = units[p][nxt[p]]
        if _blocked(u, leased.get(p, ())):
            held[p] = u
            return False
        chosen[p].append(u)
        nxt[p] += 1
        return True

    age = policy.max_age_ms
    if age is not None:
        cutoff = now_ms - age
        for p in units:
            while nxt[p] < len(units[p]) and units[p][nxt[p]].newest_ms < cutoff:
                if not take(p):
                    break
    limit = policy.max_size
    if limit is not None:
        total = sum(u.log_bytes for us in units.values() for u in us)
        total -= sum(u.log_bytes for us in chosen.values() for u in us)
        heap = [
            (units[p][nxt[p]].newest_ms, p)
            for p in units
            if nxt[p] < len(units[p]) and p not in held
        ]
        heapq.heapify(heap)
        while total > limit and heap:
            _, p = heapq.heappop(heap)
            size = units[p][nxt[p]].log_bytes
            if not take(p):
                continue
            total -= size
            if nxt[p] < len(units[p]):
                heapq.heappush(heap, (units[p][nxt[p]].newest_ms, p))
    return {p: us for p, us in chosen.items() if us}, held
