"""The pure rules of a whole-cluster restore (kafka_archive.restore): selection and renaming,
the ACLs of T carried to the target, the target principal's permissions evaluated as Kafka's
StandardAuthorizer does, and the preflight's problems (every one, each with what to do)."""

from __future__ import annotations

import pytest
from kafka_archive.replay.errors import ReplayConfigError
from kafka_archive.replay.planning.plan import TargetSpec
from kafka_archive.restore.acls import AclRule, Need, allowed, map_acls
from kafka_archive.restore.model import TopicEntry
from kafka_archive.restore.preflight import check_permissions, judge, needs_of
from kafka_archive.restore.request import RenameMap, RestoreRequest, select_groups, select_topics
from kafka_archive.restore.target import TargetFacts, principal_of

ARCHIVED = ["orders", "orders-eu", "payments", "_schemas", "__consumer_offsets", "_confluent-x"]


def _req(**kw: object) -> RestoreRequest:
    base: dict[str, object] = {
        "cluster": "prod",
        "at_ms": 1_700_000_000_000,
        "target": TargetSpec(bootstrap_servers="dr:9092", config={"sasl.password": "pw"}),
    }
    return RestoreRequest.model_validate({**base, **kw})


def test_selection_by_name_glob_regex_and_all() -> None:
    assert select_topics(ARCHIVED, _req(topics=["orders"])) == (["orders"], [])
    assert select_topics(ARCHIVED, _req(topics=["orders*"])) == (["orders", "orders-eu"], [])
    assert select_topics(ARCHIVED, _req(topics=["re:(orders|payments)"])) == (
        ["orders", "payments"],
        [],
    )
    # all user topics: internal ones left out, _schemas is a user topic and goes first
    assert select_topics(ARCHIVED, _req(all_topics=True)) == (
        ["_schemas", "orders", "orders-eu", "payments"],
        [],
    )
    # an internal topic only when named exactly; a pattern never selects one
    assert select_topics(ARCHIVED, _req(topics=["__consumer_offsets", "_*"]))[0] == [
        "_schemas",
        "__consumer_offsets",
    ]
    assert select_topics(ARCHIVED, _req(all_topics=True, exclude=["orders*"]))[0] == [
        "_schemas",
        "payments",
    ]
    assert select_topics(ARCHIVED, _req(topics=["nope", "orders"])) == (["orders"], ["nope"])
    with pytest.raises(ReplayConfigError, match="no topics selected"):
        select_topics(ARCHIVED, _req())


def test_rename_and_restore_id() -> None:
    assert RenameMap(prefix="dr.", suffix="-r").apply("orders") == "dr.orders-r"
    assert RenameMap(regex=r"^orders-(\w+)$", replacement=r"o-\1").apply("orders-eu") == "o-eu"
    assert RenameMap().identity and RenameMap(prefix="x").prefix_only
    assert not RenameMap(suffix="x").prefix_only
    a = _req(topics=["orders"])
    # the target's settings (secrets) and the parallelism are not part of the identity
    b = _req(topics=["orders"], parallelism=9).model_copy(
        update={"target": TargetSpec(bootstrap_servers="dr:9092", config={"x": "y"})}
    )
    assert a.restore_id() == b.restore_id()
    assert a.restore_id() != _req(topics=["orders"], at_ms=1).restore_id()
    assert "pw" not in a.to_json() and "***" in a.to_json()


def test_groups_selected_by_their_topics_and_patterns() -> None:
    committed = {"billing": {"orders", "ledger"}, "audit": {"payments"}, "x": {"other"}}
    assert set(select_groups(committed, ["orders", "payments"], None)) == {"billing", "audit"}
    assert set(select_groups(committed, ["orders", "payments"], ["bill*"])) == {"billing"}
    assert select_groups(committed, ["orders"], []) == {}


def _acl(kind: str, name: str, op: str, principal: str = "User:app", **kw: str) -> AclRule:
    return AclRule(
        resource_type=kind,
        resource_name=name,
        pattern_type=kw.get("pattern", "LITERAL"),
        principal=principal,
        host=kw.get("host", "*"),
        operation=op,
        permission_type=kw.get("perm", "ALLOW"),
    )


def test_acls_of_t_follow_the_renamed_topics() -> None:
    acls = [
        _acl("TOPIC", "orders", "WRITE"),
        _acl("TOPIC", "ord", "READ", pattern="PREFIXED"),
        _acl("TOPIC", "unrelated", "READ", principal="User:other"),
        _acl("GROUP", "billing", "READ"),
        _acl("GROUP", "other-group", "READ"),
        _acl("TRANSACTIONAL_ID", "app-", "WRITE", pattern="PREFIXED"),
        _acl("TRANSACTIONAL_ID", "x", "WRITE", principal="User:other"),
        _acl("DELEGATION_TOKEN", "t", "DESCRIBE"),
    ]
    kept, skipped = map_acls(
        acls,
        topics={"orders": "dr.orders"},
        groups=["billing"],
        rename=RenameMap(prefix="dr."),
        principal_map={"User:app": "User:app-dr"},
    )
    got = {(r.resource_type, r.resource_name, r.pattern_type, r.principal) for r in kept}
    assert got == {
        ("TOPIC", "dr.orders", "LITERAL", "User:app-dr"),
        ("TOPIC", "dr.ord", "PREFIXED", "User:app-dr"),
        ("GROUP", "billing", "LITERAL", "User:app-dr"),
        ("TRANSACTIONAL_ID", "app-", "PREFIXED", "User:app-dr"),
    }
    assert [s.acl.resource_type for s in skipped] == ["DELEGATION_TOKEN"]
    # a suffix rename cannot carry a prefixed pattern: it is named, not dropped silently
    _kept, skipped = map_acls(
        acls[:2],
        topics={"orders": "orders-r"},
        groups=[],
        rename=RenameMap(suffix="-r"),
        principal_map={},
    )
    assert [s.acl.resource_name for s in skipped] == ["ord"]


def test_permissions_as_the_standard_authorizer_decides() -> None:
    write = Need(resource_type="TOPIC", name="orders", operation="WRITE", why="w")
    describe = Need(resource_type="TOPIC", name="orders", operation="DESCRIBE", why="d")
    me = "User:r"
    assert allowed(write, [_acl("TOPIC", "orders", "WRITE", me)], me)
    assert allowed(write, [_acl("TOPIC", "ord", "ALL", me, pattern="PREFIXED")], me)
    assert allowed(write, [_acl("TOPIC", "*", "WRITE", "User:*")], me)
    assert allowed(describe, [_acl("TOPIC", "orders", "WRITE", me)], me)  # implied
    assert not allowed(write, [_acl("TOPIC", "orders", "READ", me)], me)
    assert not allowed(write, [_acl("TOPIC", "orders", "WRITE", "User:x")], me)
    assert not allowed(write, [_acl("TOPIC", "orders", "WRITE", me, host="10.0.0.1")], me)
    deny = _acl("TOPIC", "orders", "WRITE", "User:*", perm="DENY")
    assert not allowed(write, [_acl("TOPIC", "orders", "ALL", me), deny], me)


def test_the_principal_from_the_settings() -> None:
    scram = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512"}
    assert principal_of({**scram, "sasl.username": "r"}) == "User:r"
    assert principal_of({}) == "User:ANONYMOUS"
    assert principal_of({"security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}) is None


def _entry(source: str, **kw: object) -> TopicEntry:
    return TopicEntry.model_validate({"source": source, "target": f"dr.{source}", **kw})


def test_preflight_lists_every_problem_at_once() -> None:
    entries = [
        _entry("orders", replication_factor=3),
        _entry(
            "payments",
            holes=[
                {
                    "partition": 1,
                    "first_offset": 5,
                    "last_offset": 9,
                    "kind": "pruned",
                    "reason": "policy 30d",
                }
            ],
        ),
        _entry("audit", resumed=True),
    ]
    facts = TargetFacts(
        reachable=True,
        brokers=1,
        cluster_ops={"DESCRIBE"},
        topics={"dr.payments": 3, "dr.audit": 3},
        topic_ops={
            "dr.payments": {"WRITE", "DESCRIBE", "DESCRIBE_CONFIGS"},
            "dr.audit": {"WRITE", "DESCRIBE", "DESCRIBE_CONFIGS"},
        },
        acls=[
            _acl("TOPIC", "dr.", "ALL", "User:r", pattern="PREFIXED"),
            _acl(
                "TRANSACTIONAL_ID", "kafka-archive-replay.", "WRITE", "User:r", pattern="PREFIXED"
            ),
            _acl("TOPIC", "__kafka_archive_replay_progress", "ALL", "User:r"),
        ],
    )
    needs = needs_of(
        entries,
        existing=facts.topics,
        transactional_ids=["kafka-archive-replay.abc.0"],
        progress_topic="__kafka_archive_replay_progress",
        groups={"billing": ["dr.orders"]},
        acls=True,
    )
    verdicts = check_permissions(needs, facts, "User:r")
    problems = judge(
        entries,
        facts,
        verdicts,
        principal="User:r",
        unmatched=["nope"],
        allow_gaps=False,
        unverified_permissions=False,
    )
    codes = sorted(p.code for p in problems)
    assert codes == [
        "hole",
        "name_collision",
        "nothing_selected",
        "permission_denied",  # READ on the group
        "permission_denied",  # ALTER on the cluster (the ACLs)
        "replication_factor",
    ], [p.message for p in problems]
    denied = " | ".join(p.message for p in problems if p.code == "permission_denied")
    assert "READ on GROUP 'billing'" in denied and "ALTER on CLUSTER" in denied
    assert all(p.hint for p in problems)
    # the resumed topic exists because this restore created it: no collision
    assert not any(p.topic == "audit" for p in problems)
    # gaps allowed: the hole is a warning
    again = judge(
        entries,
        facts,
        verdicts,
        principal="User:r",
        unmatched=[],
        allow_gaps=True,
        unverified_permissions=False,
    )
    assert [p.level for p in again if p.code == "hole"] == ["warning"]


def test_permissions_not_readable_are_a_problem_not_an_assumption() -> None:
    entries = [_entry("orders")]
    facts = TargetFacts(reachable=True, brokers=3, acls=None, acls_error="CLUSTER_AUTHORIZATION")
    needs = needs_of(
        entries, existing=[], transactional_ids=[], progress_topic="p", groups={}, acls=False
    )
    verdicts = check_permissions(needs, facts, "User:r")
    assert all(ok is None for _n, ok, _how in verdicts)
    problems = judge(
        entries,
        facts,
        verdicts,
        principal="User:r",
        unmatched=[],
        allow_gaps=False,
        unverified_permissions=False,
    )
    assert [(p.level, p.code) for p in problems] == [("error", "permissions_unverified")]
    lenient = judge(
        entries,
        facts,
        verdicts,
        principal="User:r",
        unmatched=[],
        allow_gaps=False,
        unverified_permissions=True,
    )
    assert [p.level for p in lenient] == ["warning"]
    # no authorizer (or a super user): everything is allowed, and said how
    open_facts = TargetFacts(reachable=True, brokers=3, authorizer=False, acls=[])
    assert all(ok for _n, ok, _h in check_permissions(needs, open_facts, None))


def test_an_unreachable_target_is_the_one_target_problem() -> None:
    facts = TargetFacts(reachable=False, error="_TRANSPORT: connection refused")
    problems = judge(
        [_entry("orders", replication_factor=3)],
        facts,
        [],
        principal=None,
        unmatched=[],
        allow_gaps=False,
        unverified_permissions=False,
    )
    assert [p.code for p in problems] == ["target_unreachable"]
    assert "connection refused" in problems[0].message


def test_preflight_asks_only_what_the_restore_does() -> None:
    """A topic with nothing before T is created (when it existed at T), never written to:
    no WRITE or DESCRIBE_CONFIGS is asked for it, and none for a topic absent at T; the
    progress topic only when some topic has records to replay."""
    replayed = _entry("orders", configs_at_t={"message.timestamp.type": "LogAppendTime"})
    empty = _entry("audit", empty=True, partitions_at_t=2)
    absent = _entry("gone", empty=True)
    existing_empty = _entry("old", empty=True, partitions_at_t=1)

    def asked(entries: list[TopicEntry]) -> set[tuple[str, str, str]]:
        needs = needs_of(
            entries,
            existing=["dr.old"],
            transactional_ids=[],
            progress_topic="progress",
            groups={},
            acls=False,
        )
        return {(n.resource_type, n.name, n.operation) for n in needs}

    assert asked([replayed, empty, absent, existing_empty]) == {
        ("TOPIC", "dr.orders", "CREATE"),
        ("TOPIC", "dr.orders", "WRITE"),
        ("TOPIC", "dr.orders", "DESCRIBE_CONFIGS"),
        ("TOPIC", "dr.orders", "ALTER_CONFIGS"),
        ("TOPIC", "progress", "CREATE"),
        ("TOPIC", "progress", "WRITE"),
        ("TOPIC", "progress", "READ"),
        ("TOPIC", "dr.audit", "CREATE"),
    }
    assert asked([empty, absent, existing_empty]) == {("TOPIC", "dr.audit", "CREATE")}
    # a principal allowed to create dr.audit but not to write it passes the preflight
    facts = TargetFacts(
        reachable=True,
        brokers=3,
        cluster_ops={"DESCRIBE"},
        acls=[_acl("TOPIC", "dr.audit", "CREATE", "User:r")],
    )
    needs = needs_of(
        [empty, absent],
        existing=[],
        transactional_ids=[],
        progress_topic="progress",
        groups={},
        acls=False,
    )
    verdicts = check_permissions(needs, facts, "User:r")
    assert [(n.operation, ok) for n, ok, _how in verdicts] == [("CREATE", True)]
