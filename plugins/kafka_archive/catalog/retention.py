"""Retention policies and what they select: which archived segments a prune may delete.

A **policy** (:class:`RetentionPolicy`) has a name and applies to the topics its ``cluster``
and ``topic`` glob patterns match (the first matching policy of the list wins; a topic no
policy matches is kept whole; an internal topic, ``_`` first, only by a policy whose
``topic`` pattern starts with ``_`` too: :func:`policy_for`). It keeps data by age
(``max_age``: delete what is older), by total size (``max_bytes``: delete the oldest until
the topic fits), both (delete what either says), or ``keep_all``. Policies come from the
``retention`` setting (:mod:`kafka_archive.settings`): a YAML list in the configuration file,
JSON in ``KAFKA_ARCHIVE_RETENTION``::

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
  partition's prefix: neither it nor any later unit of the partition goes in this run. The
  prefixes are chosen first as if nothing were leased, then cut at the leases: a lease only
  ever keeps more (a held partition's bytes are not made up for by deleting more of the
  others, so the topic may stay above ``max_bytes`` until the lease ends).

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

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.frozen import FrozenModel
from kafka_archive.sizes import parse_bytes

__all__ = [
    "KEPT_INTERNAL",
    "RetentionConfigError",
    "RetentionPolicy",
    "Unit",
    "VersionSpan",
    "is_internal_topic",
    "load_policies",
    "parse_bytes",
    "parse_duration_ms",
    "policy_for",
    "select_units",
    "units_of",
]

_DURATION_RE: Final = re.compile(r"^(\d+) ?(ms|s|m|h|d|w)$")
_DURATION_MS: Final = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION_MS["w"] = 7 * _DURATION_MS["d"]
#: an integer ``max_age`` is milliseconds; below one second it is surely a unit forgotten
#: (``max_age: 30`` meant as 30 days would prune everything older than 30 ms)
_MIN_BARE_AGE_MS: Final = 1000


class RetentionConfigError(KafkaArchiveError, ValueError):
    """The ``retention`` setting is not a valid list of policies (the message says which
    entry and why)."""

    default_hint = (
        "retention is a list of {name, cluster, topic, max_age | max_bytes | keep_all}: "
        "max_age a duration with its unit (30d, 12h, 90m, 45s, 500ms, 2w) or an integer of "
        "milliseconds, max_bytes a size (500GiB, 2TB, 1048576) or an integer of bytes, "
        'keep_all true; e.g. [{"name": "30-days", "topic": "*", "max_age": "30d"}] '
        "(see docs/archive.md)"
    )


def _kind(value: object) -> str:
    return "a boolean" if isinstance(value, bool) else f"a {type(value).__name__}"


def parse_duration_ms(value: object) -> int:
    """``30d``, ``12h``, ``90m``, ``45s``, ``500ms``, ``2w`` or an integer of milliseconds
    (at least 1000). Strict: a boolean, a float, a string without its unit or in any other
    form is refused (``ValueError`` saying why), never read as some number."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError(
            f"{value!r} is {_kind(value)}, not a duration (write e.g. 30d, 12h, 90m, 2w)"
        )
    if isinstance(value, int):
        if value < _MIN_BARE_AGE_MS:
            raise ValueError(
                f"{value} would be {value} millisecond(s); write the unit (e.g. {value}d) or "
                f"at least {_MIN_BARE_AGE_MS} milliseconds"
            )
        return value
    m = _DURATION_RE.match(value)
    if m is None:
        raise ValueError(f"{value!r} is not a duration (e.g. 30d, 12h, 90m, 45s, 500ms, 2w)")
    ms = int(m[1]) * _DURATION_MS[m[2]]
    if ms <= 0:
        raise ValueError(f"a duration must be positive, not {value!r}")
    return ms


class RetentionPolicy(FrozenModel):
    """One named policy and the topics it applies to (glob patterns, ``*`` by default).

    Strictly typed (``strict``): a name and patterns are strings, ``keep_all`` a boolean
    (not ``"yes"`` nor 1), ``max_age``/``max_bytes`` as :func:`parse_duration_ms` and
    :func:`parse_bytes` take them (not ``true``, which lax parsing read as 1 ms / 1 byte).
    """

    model_config = ConfigDict(strict=True)

    name: str = Field(min_length=1, max_length=200)
    cluster: str = Field(default="*", min_length=1)
    topic: str = Field(default="*", min_length=1)
    max_age: str | int | None = None
    max_bytes: str | int | None = None
    keep_all: bool = False

    @field_validator("max_age", mode="before")
    @classmethod
    def _age(cls, v: object) -> object:
        if v is not None:
            parse_duration_ms(v)
        return v

    @field_validator("max_bytes", mode="before")
    @classmethod
    def _size(cls, v: object) -> object:
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
            msg = str(first["msg"]).removeprefix("Value error, ")
            raise RetentionConfigError(f"{label}: {where}: {msg}") from None
        if any(p.name == policy.name for p in out):
            raise RetentionConfigError(f"retention[{i}]: a second policy named {policy.name!r}")
        out.append(policy)
    return out


#: why a catch-all policy leaves an internal topic alone (reported by a prune)
KEPT_INTERNAL: Final = (
    "an internal topic: only a policy whose topic pattern names it (starts with '_', e.g. "
    "'__consumer_offsets' or '__*') prunes it"
)


def is_internal_topic(topic: str) -> bool:
    """Whether ``topic`` is an internal topic: its name begins with ``_``. Kafka's own
    (``__cluster_metadata``: the metadata history; ``__consumer_offsets``: the groups'
    commits; ``__transaction_state``, ``__share_group_state``) and the platform topics by the
    same convention (Schema Registry's ``_schemas``, without which retained records cannot be
    decoded; ``_confluent-*``)."""
    return topic.startswith("_")


def _names_internal(policy: RetentionPolicy) -> bool:
    return policy.topic.startswith("_")


def policy_for(
    policies: Sequence[RetentionPolicy], cluster: str, topic: str, *, internal: bool = False
) -> RetentionPolicy | None:
    """The first policy matching ``cluster``/``topic`` (``None``: keep everything).

    An internal topic (:func:`is_internal_topic`) is matched only by a policy that names it:
    its ``topic`` pattern starts with ``_`` (``__consumer_offsets``, ``__*``, ``_schemas``); a
    catch-all ``*`` or ``orders*`` never prunes the metadata history or the schemas.
    ``internal=True``: the first policy whose patterns match, named or not (to report which
    catch-all an internal topic escaped).
    """
    guard = is_internal_topic(topic) and not internal
    return next(
        (p for p in policies if p.matches(cluster, topic) and (not guard or _names_internal(p))),
        None,
    )


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
    if policy.keep_all:
        return {}, {}
    # What the policy deletes is chosen first as if nothing were leased; a lease then only
    # cuts a partition's prefix short. Choosing around a lease instead would count the held
    # bytes against ``max_bytes`` and take the other partitions' newest units to make up for
    # them: a lease must only ever keep more, never make the policy delete more.
    wanted = _policy_prefixes(policy, units, now_ms=now_ms)
    chosen: dict[int, list[Unit]] = {}
    held: dict[int, Unit] = {}
    for p, prefix in wanted.items():
        cut = next((i for i, u in enumerate(prefix) if _blocked(u, leased.get(p, ()))), len(prefix))
        if cut < len(prefix):
            held[p] = prefix[cut]
        if cut:
            chosen[p] = prefix[:cut]
    return chosen, held


def _policy_prefixes(
    policy: RetentionPolicy, units: Mapping[int, Sequence[Unit]], *, now_ms: int
) -> dict[int, list[Unit]]:
    """Per partition, the prefix of ``units`` the policy deletes, leases aside."""
    nxt = dict.fromkeys(units, 0)
    age = policy.max_age_ms
    if age is not None:
        cutoff = now_ms - age
        for p in units:
            while nxt[p] < len(units[p]) and units[p][nxt[p]].newest_ms < cutoff:
                nxt[p] += 1
    limit = policy.max_size
    if limit is not None:  # per topic: the oldest next unit of any partition goes
        total = sum(u.log_bytes for p, us in units.items() for u in us[nxt[p] :])
        heap = [(units[p][nxt[p]].newest_ms, p) for p in units if nxt[p] < len(units[p])]
        heapq.heapify(heap)
        while total > limit and heap:
            _, p = heapq.heappop(heap)
            total -= units[p][nxt[p]].log_bytes
            nxt[p] += 1
            if nxt[p] < len(units[p]):
                heapq.heappush(heap, (units[p][nxt[p]].newest_ms, p))
    return {p: list(units[p][: nxt[p]]) for p in units if nxt[p]}
