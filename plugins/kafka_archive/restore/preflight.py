"""The restore's preflight: every problem of a restore found before anything is written, each
with what to do (pure: the target's answers come in as :class:`~.target.TargetFacts`).

What is checked:

* the target answers (nothing else is judged when it does not);
* **permissions** of the target principal, each one the restore needs (:func:`needs_of`): create
  the topics it creates, write each target topic, its transactional ids (one per source
  partition: ``kafka-archive-replay.<intent>.<partition>``) and the replay progress topic, read
  the topics and groups whose positions it commits, alter the cluster's ACLs when restoring
  them. Exact where Kafka says it (``DescribeCluster``/``DescribeTopics`` authorized operations),
  else evaluated from the target's ACLs (:func:`~.acls.allowed`); when neither can be read it is
  a problem (``--unverified-permissions`` makes it a warning), never assumed;
* replication factors vs the target's broker count;
* name collisions: a target topic that exists and is not this restore's own (a resumed replay's
  topic is its own);
* holes and pruned ranges per topic (errors unless gaps are allowed);
* patterns that select nothing, topics with nothing to restore before T.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Literal

from kafka_archive.restore.acls import Need, allowed
from kafka_archive.restore.model import Problem, TopicEntry
from kafka_archive.restore.target import TargetFacts

__all__ = ["CLUSTER_RESOURCE", "check_permissions", "judge", "needs_of"]

#: the one CLUSTER resource name of Kafka's ACLs
CLUSTER_RESOURCE = "kafka-cluster"
#: operations only a super user (or a target without authorizer) has on the cluster all of
_SUPER_OPS = frozenset(
    {"ALTER", "ALTER_CONFIGS", "CLUSTER_ACTION", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS"}
)


def needs_of(
    entries: Sequence[TopicEntry],
    *,
    existing: Iterable[str],
    transactional_ids: Iterable[str],
    progress_topic: str,
    groups: dict[str, list[str]],
    acls: bool,
) -> list[Need]:
    """Every permission the restore needs on the target (see the module docstring), and only
    what it will do: ``groups``: group -> target topics whose positions are committed for
    it. A topic with nothing before T (``empty``) is only created, with its configs of T, when
    it existed then (``partitions_at_t``) and is missing: no record is written to it, so
    neither WRITE nor a config comparison is asked; one that did not exist at T needs nothing.
    The progress topic is needed only when some topic has records to replay."""
    have = set(existing)
    needs: list[Need] = []
    replayed = [e for e in entries if not e.empty]
    for e in entries:
        if e.target not in have and (not e.empty or e.partitions_at_t is not None):
            needs.append(
                Need(
                    resource_type="TOPIC",
                    name=e.target,
                    operation="CREATE",
                    why="create the topic as it was at T",
                )
            )
    for e in replayed:
        needs.append(
            Need(resource_type="TOPIC", name=e.target, operation="WRITE", why="replay its records")
        )
        needs.append(
            Need(
                resource_type="TOPIC",
                name=e.target,
                operation="DESCRIBE_CONFIGS",
                why="compare its configs with the source's at T",
            )
        )
        if e.configs_at_t.get("message.timestamp.type") == "LogAppendTime":
            needs.append(
                Need(
                    resource_type="TOPIC",
                    name=e.target,
                    operation="ALTER_CONFIGS",
                    why="switch it to LogAppendTime once its data is in",
                )
            )
    for tid in transactional_ids:
        needs.append(
            Need(
                resource_type="TRANSACTIONAL_ID",
                name=tid,
                operation="WRITE",
                why="the replay's exactly-once transactions",
            )
        )
    if replayed and progress_topic not in have:
        needs.append(
            Need(
                resource_type="TOPIC",
                name=progress_topic,
                operation="CREATE",
                why="the replays' progress topic",
            )
        )
    for op in ("WRITE", "READ") if replayed else ():
        needs.append(
            Need(
                resource_type="TOPIC",
                name=progress_topic,
                operation=op,
                why="the replays' progress records (resume)",
            )
        )
    read_topics: set[str] = set()
    for group, topics in sorted(groups.items()):
        needs.append(
            Need(
                resource_type="GROUP",
                name=group,
                operation="READ",
                why="commit the group's translated positions",
            )
        )
        read_topics |= set(topics)
    for topic in sorted(read_topics):
        needs.append(
            Need(
                resource_type="TOPIC",
                name=topic,
                operation="READ",
                why="commit group positions on it",
            )
        )
    if acls:
        needs.append(
            Need(
                resource_type="CLUSTER",
                name=CLUSTER_RESOURCE,
                operation="ALTER",
                why="create the ACLs of T",
            )
        )
    return needs


def _unrestricted(facts: TargetFacts) -> bool:
    """No authorizer, or a principal with every cluster operation (a super user)."""
    return not facts.authorizer or (
        facts.cluster_ops is not None and facts.cluster_ops >= _SUPER_OPS
    )


def check_permissions(
    needs: Sequence[Need], facts: TargetFacts, principal: str | None
) -> list[tuple[Need, bool | None, str]]:
    """Each need with its verdict (``None``: could not be told) and how it was decided."""
    out: list[tuple[Need, bool | None, str]] = []
    unrestricted = _unrestricted(facts)
    for need in needs:
        if need.resource_type == "CLUSTER" and facts.cluster_ops is not None:
            out.append((need, need.operation in facts.cluster_ops, "DescribeCluster"))
            continue
        if need.resource_type == "TOPIC" and need.name in facts.topic_ops:
            ops = facts.topic_ops[need.name]
            if ops is not None:
                ok = need.operation in ops or (
                    need.operation == "DESCRIBE_CONFIGS" and "ALTER_CONFIGS" in ops
                )
                out.append((need, ok, "DescribeTopics"))
                continue
        if (
            need.resource_type == "TOPIC"
            and need.operation == "CREATE"
            and facts.cluster_ops is not None
            and "CREATE" in facts.cluster_ops
        ):
            out.append((need, True, "CREATE on the cluster (DescribeCluster)"))
            continue
        if unrestricted:
            how = "no authorizer" if not facts.authorizer else "every cluster operation"
            out.append((need, True, how))
            continue
        if facts.acls is None or principal is None:
            out.append((need, None, "unknown"))
            continue
        ok = allowed(need, facts.acls, principal)
        if not ok and need.resource_type == "TOPIC" and need.operation == "CREATE":
            cluster = Need(
                resource_type="CLUSTER", name=CLUSTER_RESOURCE, operation="CREATE", why=need.why
            )
            ok = allowed(cluster, facts.acls, principal)
        out.append((need, ok, "the target's ACLs"))
    return out


def judge(
    entries: Sequence[TopicEntry],
    facts: TargetFacts,
    verdicts: Sequence[tuple[Need, bool | None, str]],
    *,
    principal: str | None,
    unmatched: Sequence[str],
    allow_gaps: bool,
    unverified_permissions: bool,
) -> list[Problem]:
    """Every problem of the restore (see the module docstring), errors first."""
    problems: list[Problem] = []
    for pattern in unmatched:
        problems.append(
            Problem(
                level="error",
                code="nothing_selected",
                message=f"topic pattern {pattern!r} matches no archived topic",
                hint="check the name (`kafka-archive catalog topics`) or drop the pattern",
            )
        )
    if not facts.reachable:
        problems.append(
            Problem(
                level="error",
                code="target_unreachable",
                message=f"the target cluster did not answer: {facts.error}",
                hint="check the bootstrap servers and --target-config (TLS, "
                "SASL), and that the target is up",
            )
        )
    else:
        problems += _permission_problems(facts, verdicts, principal, unverified_permissions)
        for e in entries:
            if e.target in facts.topics and not e.resumed:
                problems.append(
                    Problem(
                        level="error",
                        code="name_collision",
                        topic=e.source,
                        message=f"topic {e.target!r} already exists on the target",
                        hint="restore under other names (--prefix, "
                        "--suffix, --rename-regex), or delete the target topic "
                        "first",
                    )
                )
            rf = e.replication_factor
            if e.target not in facts.topics and rf is not None and 0 < facts.brokers < rf:
                problems.append(
                    Problem(
                        level="error",
                        code="replication_factor",
                        topic=e.source,
                        message=f"{e.source} had replication factor {rf} at T; "
                        f"the target has {facts.brokers} broker(s)",
                        hint=f"pass --replication-factor {facts.brokers} (or fewer)",
                    )
                )
    for e in entries:
        for h in e.holes:
            what = "pruned by retention" if h.get("kind") == "pruned" else f"a {h.get('kind')}"
            problems.append(
                Problem(
                    level="warning" if allow_gaps else "error",
                    code="hole",
                    topic=e.source,
                    message=f"{e.source}-{h.get('partition')} "
                    f"offsets {h.get('first_offset')}..{h.get('last_offset')} "
                    f"cannot be restored ({what}: {h.get('reason', '')})",
                    hint="restore around it with --allow-gaps (its records are "
                    "lost), or restore the archive's missing objects first",
                )
            )
        if e.empty:
            problems.append(
                Problem(
                    level="warning",
                    code="nothing_before_t",
                    topic=e.source,
                    message=f"{e.source} has no archived record before T",
                    hint="it is created as it was at T when it existed then, with no data",
                )
            )
    return sorted(problems, key=lambda p: p.level != "error")


def _permission_problems(
    facts: TargetFacts,
    verdicts: Sequence[tuple[Need, bool | None, str]],
    principal: str | None,
    unverified_permissions: bool,
) -> list[Problem]:
    who = principal or "the target principal"
    problems: list[Problem] = []
    denied = [n for n, ok, _how in verdicts if ok is False]
    unknown = [n for n, ok, _how in verdicts if ok is None]
    for n in denied:
        problems.append(
            Problem(
                level="error",
                code="permission_denied",
                message=f"{who} may not {n.operation} on {n.resource_type} {n.name!r} ({n.why})",
                hint="grant it: kafka-acls.sh "
                f"--add --allow-principal {who} --operation {n.operation} "
                f"{_resource_option(n.resource_type, n.name)}",
            )
        )
    if unknown:
        why = (
            "the target principal is not known from the settings (give --target-principal)"
            if principal is None
            else f"its ACLs cannot be read ({facts.acls_error})"
        )
        level: Literal["error", "warning"] = "warning" if unverified_permissions else "error"
        names = "; ".join(n.text() for n in unknown[:5]) + (" ..." if len(unknown) > 5 else "")
        problems.append(
            Problem(
                level=level,
                code="permissions_unverified",
                message=f"{len(unknown)} permission(s) cannot be checked: {why}: {names}",
                hint="grant DESCRIBE on the CLUSTER to the target "
                "principal so the preflight can read the ACLs, or pass "
                "--unverified-permissions to go ahead unchecked",
            )
        )
    return problems


def _resource_option(kind: str, name: str) -> str:
    return {
        "TOPIC": f"--topic {name}",
        "GROUP": f"--group {name}",
        "TRANSACTIONAL_ID": f"--transactional-id {name}",
        "CLUSTER": "--cluster",
    }.get(kind, f"--resource {kind}:{name}")
