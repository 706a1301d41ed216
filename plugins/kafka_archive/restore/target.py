"""The restore's questions to the target cluster (Admin API), read-only, and its one write there
that no replay does: the restored ACLs.

:func:`target_facts` gathers what the preflight (:mod:`kafka_archive.restore.preflight`)
judges, in a few requests and without writing anything: whether the target answers, its cluster
id and brokers, the principal's authorized operations on the cluster (``DescribeCluster`` with
``include_authorized_operations``) and on the target topics that exist
(``DescribeTopics``, likewise), the existing topics (name collisions), and the ACLs
(``DescribeAcls``, to evaluate the permissions on what does not exist yet: topics to create,
transactional ids, groups). What cannot be asked is recorded as such (``None`` and the
reason), never assumed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from kafka_archive.replay.target.clients import CLIENT_LOG_SETTINGS, new_client
from kafka_archive.restore.acls import AclRule

__all__ = ["TargetFacts", "alter_topic_configs", "create_acls", "principal_of", "target_facts"]

#: confluent-kafka's name of a resource type -> Kafka's (the history's, the ACLs' here)
_KAFKA_TYPE = {"BROKER": "CLUSTER"}
_CLIENT_TYPE = {v: k for k, v in _KAFKA_TYPE.items()}

#: how long each Admin request may take (a failover target under load answers slowly)
REQUEST_TIMEOUT_S = 30.0


@dataclass
class TargetFacts:
    """What the target said (see the module docstring); ``None``: not known, with the reason."""

    reachable: bool
    error: str | None = None
    cluster_id: str | None = None
    brokers: int = 0
    #: the principal's operations on the cluster; ``None``: the broker did not say
    cluster_ops: set[str] | None = None
    #: existing topics -> partition count
    topics: dict[str, int] = field(default_factory=dict)
    #: the principal's operations on existing topics the restore writes
    topic_ops: dict[str, set[str] | None] = field(default_factory=dict)
    #: every ACL of the target (``None``: not readable, ``acls_error`` says why)
    acls: list[AclRule] | None = None
    acls_error: str | None = None
    #: False when the target has no authorizer (every request is allowed)
    authorizer: bool = True


def principal_of(config: Mapping[str, str]) -> str | None:
    """The principal the target sees for these client settings when it can be told from them:
    ``User:<sasl.username>`` for SASL PLAIN/SCRAM, ``User:ANONYMOUS`` for PLAINTEXT/SSL without
    a client certificate; ``None`` otherwise (mTLS, OAUTHBEARER, Kerberos: give it)."""
    protocol = config.get("security.protocol", "plaintext").lower()
    mechanism = config.get("sasl.mechanism", config.get("sasl.mechanisms", "GSSAPI")).upper()
    if protocol.startswith("sasl"):
        if mechanism in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512") and config.get("sasl.username"):
            return f"User:{config['sasl.username']}"
        return None
    if protocol == "ssl" and any(k.startswith("ssl.certificate") for k in config):
        return None
    return "User:ANONYMOUS"


def _ops(found: Any) -> set[str] | None:
    if found is None:
        return None
    return {op.name for op in found}


def _error_text(exc: BaseException) -> str:
    err = exc.args[0] if exc.args else exc
    if isinstance(err, KafkaError):
        return f"{err.name()}: {err.str()}"
    return str(exc)


def _security_disabled(exc: BaseException) -> bool:
    err = exc.args[0] if exc.args else None
    return isinstance(err, KafkaError) and err.code() == KafkaError.SECURITY_DISABLED


def _rules(bindings: Iterable[Any]) -> list[AclRule]:
    return [
        AclRule(
            resource_type=_KAFKA_TYPE.get(b.restype.name, b.restype.name),
            resource_name=b.name,
            pattern_type=b.resource_pattern_type.name,
            principal=b.principal,
            host=b.host,
            operation=b.operation.name,
            permission_type=b.permission_type.name,
        )
        for b in bindings
    ]


def target_facts(client_config: Mapping[str, str], topics: Iterable[str]) -> TargetFacts:
    """Ask the target what the preflight needs about writing ``topics`` (target names)."""
    admin = new_client(AdminClient, {**CLIENT_LOG_SETTINGS, **client_config})
    try:
        described = admin.describe_cluster(
            include_authorized_operations=True, request_timeout=REQUEST_TIMEOUT_S
        ).result(REQUEST_TIMEOUT_S + 5)
    except (KafkaException, ValueError, TypeError) as exc:
        return TargetFacts(reachable=False, error=_error_text(exc))
    facts = TargetFacts(
        reachable=True,
        cluster_id=described.cluster_id,
        brokers=len(described.nodes),
        cluster_ops=_ops(described.authorized_operations),
    )
    metadata = admin.list_topics(timeout=REQUEST_TIMEOUT_S)
    facts.topics = {name: len(t.partitions) for name, t in metadata.topics.items()}
    existing = sorted(set(topics) & set(facts.topics))
    if existing:
        futures = admin.describe_topics(
            TopicCollection(existing),
            include_authorized_operations=True,
            request_timeout=REQUEST_TIMEOUT_S,
        )
        for name, fut in futures.items():
            try:
                facts.topic_ops[name] = _ops(
                    fut.result(REQUEST_TIMEOUT_S + 5).authorized_operations
                )
            except KafkaException:
                facts.topic_ops[name] = set()  # not even DESCRIBE: nothing is authorized
    # every ACL (a filter of None names and principals: any); the stubs say str
    anything: Any = None
    everything = AclBindingFilter(
        ResourceType.ANY,
        anything,
        ResourcePatternType.ANY,
        anything,
        anything,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    try:
        found = admin.describe_acls(everything, request_timeout=REQUEST_TIMEOUT_S).result(
            REQUEST_TIMEOUT_S + 5
        )
    except KafkaException as exc:
        if _security_disabled(exc):
            facts.authorizer = False
            facts.acls = []
        else:
            facts.acls_error = _error_text(exc)
    else:
        facts.acls = _rules(found)
    return facts


def create_acls(client_config: Mapping[str, str], rules: Iterable[AclRule]) -> list[str]:
    """Create ``rules`` on the target (creating an existing ACL changes nothing, so a resumed
    restore creates them again safely). Returns the error text of each one refused.
    """
    bindings = [
        AclBinding(
            ResourceType[_CLIENT_TYPE.get(r.resource_type, r.resource_type)],
            r.resource_name,
            ResourcePatternType[r.pattern_type],
            r.principal,
            r.host,
            AclOperation[r.operation],
            AclPermissionType[r.permission_type],
        )
        for r in rules
    ]
    if not bindings:
        return []
    admin = new_client(AdminClient, {**CLIENT_LOG_SETTINGS, **client_config})
    failed = []
    for binding, fut in admin.create_acls(bindings, request_timeout=REQUEST_TIMEOUT_S).items():
        try:
            fut.result(REQUEST_TIMEOUT_S + 5)
        except KafkaException as exc:
            failed.append(f"{binding}: {_error_text(exc)}")
    return failed


def alter_topic_configs(
    client_config: Mapping[str, str], topic: str, configs: Mapping[str, str]
) -> None:
    """Set ``configs`` on ``topic`` (IncrementalAlterConfigs ``SET``: the others stay).

    Raises:
        KafkaException: the target refused.
    """
    from confluent_kafka.admin import (  # type: ignore[attr-defined]
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
    )

    admin = new_client(AdminClient, {**CLIENT_LOG_SETTINGS, **client_config})
    entries = [
        ConfigEntry(n, v, incremental_operation=AlterConfigOpType.SET) for n, v in configs.items()
    ]
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    admin.incremental_alter_configs([res], request_timeout=REQUEST_TIMEOUT_S)[res].result(
        REQUEST_TIMEOUT_S + 5
    )
