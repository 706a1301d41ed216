"""What a whole-cluster restore is asked to do: :class:`RestoreRequest`, and the pure rules that
turn it into topics, target names and groups.

Selection (:func:`select_topics`): topic names, shell globs (``orders-*``: any of ``*?[``) or
regular expressions (``re:orders-(eu|us)``, matched against the whole name), or every user topic
of the archived cluster (``all_topics``). Internal topics (names starting with ``__``, and
``_confluent*``) are left out unless named exactly; ``exclude`` patterns remove topics again.
``_schemas`` (Schema Registry's store) is a user topic: when selected it is restored **first and
alone**, so that a Schema Registry started on the target reads the same schemas under the same
ids before any restored record that refers to them is read.

Target names (:class:`RenameMap`): an optional regular expression substitution (``regex`` ->
``replacement``, Python's :func:`re.sub` syntax, applied once), then ``prefix`` and ``suffix``.

Groups: ``groups`` ``None`` selects every group that had committed on a selected topic by T;
a list of patterns (names, globs, ``re:``) selects those of them; an empty list, none.

The restore id (:meth:`RestoreRequest.restore_id`) is derived from the request as given, with
the target's identity but never its settings: the same command run again (same absolute T) is
the same restore, and resumes it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import re
from collections.abc import Iterable, Sequence

from pydantic import ConfigDict, Field, field_validator

from kafka_archive.frozen import FrozenModel
from kafka_archive.replay.errors import ReplayConfigError
from kafka_archive.replay.planning.plan import TargetSpec

__all__ = [
    "SCHEMAS_TOPIC",
    "RenameMap",
    "RestoreRequest",
    "is_internal",
    "matches",
    "select_groups",
    "select_topics",
]

#: Schema Registry's topic: restored first when selected (see the module docstring)
SCHEMAS_TOPIC = "_schemas"
#: what a restore leaves out unless named: Kafka's own topics, Confluent's, and ours
_INTERNAL_PREFIXES = ("__", "_confluent")


def is_internal(topic: str) -> bool:
    """Whether ``topic`` is a cluster-internal topic (left out of ``all``/patterns)."""
    return topic.startswith(_INTERNAL_PREFIXES)


def _is_glob(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


def matches(pattern: str, name: str) -> bool:
    """Whether ``pattern`` (a name, a glob, or ``re:REGEX`` matched whole) selects ``name``."""
    if pattern.startswith("re:"):
        return re.fullmatch(pattern[3:], name) is not None
    if _is_glob(pattern):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern == name


class RenameMap(FrozenModel):
    """How source topic names become target names (see the module docstring)."""

    prefix: str = ""
    suffix: str = ""
    regex: str | None = None
    replacement: str = ""

    @field_validator("regex")
    @classmethod
    def _compiles(cls, v: str | None) -> str | None:
        if v is not None:
            try:
                re.compile(v)
            except re.error as exc:
                raise ValueError(f"rename regex {v!r} does not compile: {exc}") from None
        return v or None

    @property
    def identity(self) -> bool:
        """Whether every name stays as it is."""
        return not (self.prefix or self.suffix or self.regex)

    @property
    def prefix_only(self) -> bool:
        """Whether the map only adds a prefix (prefixed ACL patterns can be mapped then)."""
        return not (self.suffix or self.regex)

    def apply(self, topic: str) -> str:
        name = topic
        if self.regex:
            name = re.sub(self.regex, self.replacement, name, count=1)
        return f"{self.prefix}{name}{self.suffix}"


class RestoreRequest(FrozenModel):
    """A whole-cluster restore as asked (times already resolved to epoch ms)."""

    cluster: str
    #: names, globs or ``re:`` patterns; with ``all_topics`` every user topic
    topics: list[str] = Field(default_factory=list)
    all_topics: bool = False
    exclude: list[str] = Field(default_factory=list)
    #: the moment T: every topic as it was then (records before T; configs, ACLs, groups at T)
    at_ms: int
    #: where the replayed range starts (a replay ``--from``: ``earliest`` or a time)
    from_: str = Field(default="earliest", alias="from")
    rename: RenameMap = Field(default_factory=RenameMap)
    #: group patterns; ``None``: every group that committed on a selected topic by T
    groups: list[str] | None = None
    #: restore the ACLs of the selected topics and groups as they were at T
    acls: bool = False
    #: source principal -> target principal (``User:app`` -> ``User:app-dr``) for the ACLs
    principal_map: dict[str, str] = Field(default_factory=dict)
    target: TargetSpec
    #: the created topics' replication factor (``None``: the source's at T, else the target's
    #: default)
    replication_factor: int | None = Field(default=None, ge=1)
    #: how many topics replay at once (each replays its partitions in parallel)
    parallelism: int = Field(default=4, ge=1, le=256)
    allow_gaps: bool = False
    #: the target principal the permission check evaluates ACLs for (``None``: from the SASL
    #: user of the target settings)
    principal: str | None = None
    #: let the plan go ahead when the target's permissions cannot be read (no DESCRIBE on
    #: the cluster): the problems become warnings
    unverified_permissions: bool = False

    model_config = ConfigDict(populate_by_name=True)

    @field_validator("topics", "exclude")
    @classmethod
    def _patterns(cls, v: list[str]) -> list[str]:
        for p in v:
            if p.startswith("re:"):
                try:
                    re.compile(p[3:])
                except re.error as exc:
                    raise ValueError(f"pattern {p!r} does not compile: {exc}") from None
        return [p for p in v if p]

    def restore_id(self) -> str:
        """The id of this restore: the request as given, the target by identity only."""
        body = self.model_dump(mode="json", by_alias=True, exclude={"target", "parallelism"})
        body["target"] = self.target.identity()
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        return f"restore-{digest[:16]}"

    def redacted(self) -> RestoreRequest:
        """The request with the target's secret settings replaced (what is stored)."""
        return self.model_copy(update={"target": self.target.redacted()})

    def to_json(self) -> str:
        return self.redacted().model_dump_json(by_alias=True)


def select_topics(archived: Iterable[str], request: RestoreRequest) -> tuple[list[str], list[str]]:
    """The selected topics of ``archived`` in restore order (``_schemas`` first, then by
    name) and the patterns that selected nothing (each is a problem the plan reports).

    Raises:
        ReplayConfigError: nothing is asked (neither topics nor ``all_topics``).
    """
    if not request.topics and not request.all_topics:
        raise ReplayConfigError(
            "no topics selected",
            hint="name topics or patterns (--topic NAME, --topic 'orders-*', --topic 're:...') "
            "or pass --all-topics",
        )
    names = sorted(set(archived))
    chosen: set[str] = set()
    unmatched: list[str] = []
    for pattern in request.topics:
        hit = {n for n in names if matches(pattern, n) and (n == pattern or not is_internal(n))}
        if not hit:
            unmatched.append(pattern)
        chosen |= hit
    if request.all_topics:
        chosen |= {n for n in names if not is_internal(n)}
    chosen = {n for n in chosen if not any(matches(x, n) for x in request.exclude)}
    ordered = sorted(chosen, key=lambda n: (n != SCHEMAS_TOPIC, n))
    return ordered, unmatched


def select_groups(
    committed: dict[str, set[str]], selected: Sequence[str], patterns: Sequence[str] | None
) -> dict[str, set[str]]:
    """``{group: topics it committed on}`` of the groups the restore moves: those with commits
    on a selected topic, filtered by ``patterns`` (``None``: all of them)."""
    wanted = set(selected)
    out: dict[str, set[str]] = {}
    for group, topics in sorted(committed.items()):
        if not topics & wanted:
            continue
        if patterns is not None and not any(matches(p, group) for p in patterns):
            continue
        out[group] = set(topics)
    return out
