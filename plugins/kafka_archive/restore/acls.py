"""ACLs in a restore: the source's ACLs at T carried to the target, and the target principal's
own permissions evaluated the way Kafka's ``StandardAuthorizer`` does.

Both are pure; the Admin API calls are in :mod:`kafka_archive.restore.target`. Resource types,
pattern types, operations and permissions are Kafka's enum names (``TOPIC``, ``PREFIXED``,
``WRITE``, ``ALLOW``), as the metadata history stores them.

**Which ACLs of T are restored** (:func:`map_acls`): those on the selected topics (a literal name
among them, ``*``, or a prefix one of them starts with) and on the selected groups, renamed like
the topics; and the ``TRANSACTIONAL_ID`` and ``CLUSTER`` ACLs of the principals that have one of
those (a producer restored without its transactional-id ACL could not write). A prefixed topic
pattern can only follow a prefix-only rename; other ACLs that cannot be carried are listed with
the reason, never dropped silently. ``principal_map`` replaces principals (``User:app`` ->
``User:app-dr``).

**Evaluating a principal's permission** (:func:`allowed`): a DENY that matches wins; else an
ALLOW that matches grants. An ACL matches when its resource type is the one asked, its pattern
matches the name (``LITERAL``: equal or ``*``; ``PREFIXED``: the name starts with it), its
principal is the one asked or ``User:*``, its host is ``*`` (an ACL for one host cannot be told
to apply from here: it grants nothing in this check) and its operation is the one asked or
``ALL``, or implies it (``READ``/``WRITE``/``DELETE``/``ALTER`` imply ``DESCRIBE``;
``ALTER_CONFIGS`` implies ``DESCRIBE_CONFIGS``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from kafka_archive.frozen import FrozenModel
from kafka_archive.restore.request import RenameMap

__all__ = [
    "AclLike",
    "AclRule",
    "Need",
    "SkippedAcl",
    "allowed",
    "map_acls",
]

_IMPLIES = {
    "DESCRIBE": {"READ", "WRITE", "DELETE", "ALTER"},
    "DESCRIBE_CONFIGS": {"ALTER_CONFIGS"},
}
_CARRIED_FOR_PRINCIPALS = {"TRANSACTIONAL_ID", "CLUSTER"}


class AclLike(Protocol):
    """One ACL binding (the history's ``AclAt`` is one)."""

    @property
    def resource_type(self) -> str: ...
    @property
    def resource_name(self) -> str: ...
    @property
    def pattern_type(self) -> str: ...
    @property
    def principal(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def operation(self) -> str: ...
    @property
    def permission_type(self) -> str: ...


class AclRule(FrozenModel):
    """One ACL binding, as restored or as read from the target."""

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str = "*"
    operation: str
    permission_type: str

    def text(self) -> str:
        return (
            f"{self.permission_type} {self.principal} {self.operation} on {self.resource_type} "
            f"{self.pattern_type.lower()} {self.resource_name!r}"
            + ("" if self.host == "*" else f" from {self.host}")
        )


class SkippedAcl(FrozenModel):
    """An ACL of T that is not restored, and why."""

    acl: AclRule
    reason: str


class Need(FrozenModel):
    """A permission the restore needs on the target, and what for."""

    resource_type: str
    name: str
    operation: str
    why: str

    def text(self) -> str:
        return f"{self.operation} on {self.resource_type} {self.name!r} ({self.why})"


def _rule(acl: AclLike) -> AclRule:
    return AclRule(
        resource_type=acl.resource_type,
        resource_name=acl.resource_name,
        pattern_type=acl.pattern_type,
        principal=acl.principal,
        host=acl.host,
        operation=acl.operation,
        permission_type=acl.permission_type,
    )


def _pattern_hits(pattern_type: str, pattern: str, names: Iterable[str]) -> list[str]:
    if pattern_type == "LITERAL":
        return [n for n in names if pattern in ("*", n)]
    if pattern_type == "PREFIXED":
        return [n for n in names if n.startswith(pattern)]
    return []


def map_acls(
    acls: Iterable[AclLike],
    *,
    topics: Mapping[str, str],
    groups: Iterable[str],
    rename: RenameMap,
    principal_map: Mapping[str, str],
) -> tuple[list[AclRule], list[SkippedAcl]]:
    """The target ACLs of a restore of ``topics`` (source -> target name) and ``groups`` from
    the source's ACLs at T, and those left out for a reason (see the module docstring)."""
    group_names = set(groups)
    kept: list[AclRule] = []
    skipped: list[SkippedAcl] = []
    principals: set[str] = set()
    later: list[AclRule] = []
    for acl in acls:
        rule = _rule(acl)
        kind = rule.resource_type
        if kind == "TOPIC":
            hits = _pattern_hits(rule.pattern_type, rule.resource_name, topics)
            if not hits:
                continue  # an ACL of a topic not restored
            if rule.resource_name == "*" and rule.pattern_type == "LITERAL":
                kept.append(rule)
            elif rule.pattern_type == "LITERAL":
                kept.append(rule.model_copy(update={"resource_name": topics[rule.resource_name]}))
            elif rename.prefix_only:
                name = rename.prefix + rule.resource_name
                kept.append(rule.model_copy(update={"resource_name": name}))
            else:
                skipped.append(
                    SkippedAcl(
                        acl=rule,
                        reason="a prefixed topic pattern cannot follow a suffix or regex "
                        "rename: grant it on the target by hand",
                    )
                )
                continue
            principals.add(rule.principal)
        elif kind == "GROUP":
            if not _pattern_hits(rule.pattern_type, rule.resource_name, group_names):
                continue
            kept.append(rule)
            principals.add(rule.principal)
        elif kind in _CARRIED_FOR_PRINCIPALS:
            later.append(rule)
        else:
            skipped.append(
                SkippedAcl(acl=rule, reason=f"{kind} ACLs are not part of a topic restore")
            )
    for rule in later:
        if rule.principal in principals or rule.principal == "User:*":
            kept.append(rule)
    out = [
        r.model_copy(update={"principal": principal_map.get(r.principal, r.principal)})
        for r in kept
    ]
    unique = {r.model_dump_json(): r for r in out}
    return sorted(unique.values(), key=lambda r: r.model_dump_json()), skipped


def _matches(rule: AclRule, need: Need, principals: set[str]) -> bool:
    if rule.resource_type != need.resource_type or rule.principal not in principals:
        return False
    if rule.pattern_type == "LITERAL":
        if rule.resource_name not in ("*", need.name):
            return False
    elif rule.pattern_type == "PREFIXED":
        if not need.name.startswith(rule.resource_name):
            return False
    else:
        return False
    return True


def _covers(operation: str, need: str) -> bool:
    return operation in ("ALL", need) or operation in _IMPLIES.get(need, set())


def allowed(need: Need, rules: Sequence[AclRule], principal: str) -> bool:
    """Whether ``principal`` may do ``need`` under ``rules`` (see the module docstring)."""
    principals = {principal, "User:*"}
    found = [r for r in rules if _matches(r, need, principals)]
    for r in found:
        if r.permission_type == "DENY" and r.operation in ("ALL", need.operation):
            return False
    return any(
        r.permission_type == "ALLOW" and r.host == "*" and _covers(r.operation, need.operation)
        for r in found
    )
