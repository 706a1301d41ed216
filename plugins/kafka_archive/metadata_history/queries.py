"""Questions to the metadata history: a topic's state at T, what changed when (and by which
record), the ACLs at T, the incarnations (topic ids) of a topic name.

Every answer object has ``to_json()`` (the form ``--json`` prints). A cluster whose history
comes from Admin API snapshots is answered at snapshot resolution: the state as of the last
snapshot at or before T, and the answer says so (``resolution_note``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

from sqlalchemy import Connection, and_, func, or_, select

from kafka_archive.metadata_history.apply import ADMIN_SNAPSHOT, build_position, load_state
from kafka_archive.metadata_history.defaults import TOPIC_CONFIG_DEFAULTS
from kafka_archive.metadata_history.models import (
    ACLS,
    ADMIN_SNAPSHOTS,
    CONFIGS,
    FEATURES,
    PARTITIONS,
    QUOTAS,
    SCRAM,
    TOPICS,
)
from kafka_archive.metadata_history.state import RESOURCE_BROKER, RESOURCE_TOPIC
from kafka_archive.timeparse import format_ms

__all__ = [
    "RESOURCE_STATIC",
    "AclAt",
    "HistoryEvent",
    "Incarnation",
    "ResolvedConfig",
    "TopicState",
    "acls_at",
    "first_admin_snapshot",
    "history_start",
    "incarnations",
    "resolution_note",
    "resolved_configs",
    "topic_at",
    "topic_history",
]

#: pseudo resource type of the brokers' static configs an Admin API snapshot saw (keyed by the
#: topic config name they resolve), never written by the metadata log
RESOURCE_STATIC = -RESOURCE_BROKER


@dataclass(frozen=True)
class TopicState:
    """One topic (one incarnation: ``topic_id``) as it was at a moment.

    ``configs`` are the topic's dynamic overrides at T; ``as_of_ms`` the time of the last
    change applied to it; ``source`` ``metadata_log`` or ``admin_snapshot``;
    ``resolution_note`` says how precise the answer is when it is not exact."""

    cluster: str
    topic: str
    topic_id: str | None
    partitions: int
    replicas: dict[int, list[int]]
    leaders: dict[int, int]
    configs: dict[str, str]
    as_of_ms: int
    source: str
    resolution_note: str | None

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["as_of"] = format_ms(self.as_of_ms)
        return {"kind": "topic_state", **out}


@dataclass(frozen=True)
class ResolvedConfig:
    """A topic config's effective value and where it comes from: ``topic`` (the override),
    ``cluster_default`` (dynamic cluster-wide broker default), ``static_broker`` (seen by an
    Admin API snapshot), ``kafka_default`` (Kafka's built-in default; a static broker setting
    the metadata log cannot see may differ)."""

    name: str
    value: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": self.source}


@dataclass(frozen=True)
class Incarnation:
    """One topic id of a topic name, with its lifetime (``deleted_ms`` None: alive)."""

    topic: str
    topic_id: str
    created_ms: int
    created_seq: int
    deleted_ms: int | None
    deleted_seq: int | None

    def alive_at(self, at_ms: int) -> bool:
        return self.created_ms <= at_ms and (self.deleted_ms is None or self.deleted_ms > at_ms)

    def describe(self) -> str:
        end = "now" if self.deleted_ms is None else format_ms(self.deleted_ms)
        return f"{self.topic_id} from {format_ms(self.created_ms)} to {end}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": "incarnation", **asdict(self)}


@dataclass(frozen=True)
class HistoryEvent:
    """One change of a topic: what, when, and the record that caused it."""

    at_ms: int
    seq: int
    topic_id: str
    what: str
    detail: dict[str, Any]
    record_type: str
    record_version: int
    snapshot_id: str | None
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": "topic_change", **asdict(self), "time": format_ms(self.at_ms)}


_ACL_RESOURCE = {0: "UNKNOWN", 1: "ANY", 2: "TOPIC", 3: "GROUP", 4: "CLUSTER"}
_ACL_RESOURCE |= {5: "TRANSACTIONAL_ID", 6: "DELEGATION_TOKEN", 7: "USER"}
_PATTERN = {0: "UNKNOWN", 1: "ANY", 2: "MATCH", 3: "LITERAL", 4: "PREFIXED"}
_OPERATION = {0: "UNKNOWN", 1: "ANY", 2: "ALL", 3: "READ", 4: "WRITE", 5: "CREATE"}
_OPERATION |= {6: "DELETE", 7: "ALTER", 8: "DESCRIBE", 9: "CLUSTER_ACTION"}
_OPERATION |= {10: "DESCRIBE_CONFIGS", 11: "ALTER_CONFIGS", 12: "IDEMPOTENT_WRITE"}
_OPERATION |= {13: "CREATE_TOKENS", 14: "DESCRIBE_TOKENS", 15: "TWO_PHASE_COMMIT"}
_PERMISSION = {0: "UNKNOWN", 1: "ANY", 2: "DENY", 3: "ALLOW"}


@dataclass(frozen=True)
class AclAt:
    """One ACL binding alive at a moment (Kafka's enum names)."""

    acl_id: str
    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission_type: str
    created_ms: int

    def to_json(self) -> dict[str, Any]:
        return {"kind": "acl", **asdict(self)}


def _name(table: dict[int, str], value: int) -> str:
    return table.get(value, f"UNKNOWN({value})")


def incarnations(conn: Connection, cluster: str, topic: str) -> list[Incarnation]:
    """Every topic id ``topic`` had in ``cluster``, oldest first."""
    t = TOPICS
    rows = conn.execute(
        select(t)
        .where(t.c.cluster == cluster, t.c.name == topic)
        .order_by(t.c.created_seq, t.c.topic_id)
    ).mappings()
    return [
        Incarnation(
            topic,
            r["topic_id"],
            r["created_ms"],
            r["created_seq"],
            r["deleted_ms"],
            r["deleted_seq"],
        )
        for r in rows
    ]


def history_start(conn: Connection, cluster: str) -> tuple[int, str] | None:
    """``(at_ms, snapshot id)`` when ``cluster``'s metadata log history begins with a KRaft
    snapshot (its first build found the log before the snapshot not archived, e.g. cleaned by
    Kafka): nothing is known before ``at_ms``. ``None``: the history reaches back to the log's
    start (or comes from Admin API snapshots, whose resolution note speaks for itself).

    Derived from the rows (no column of its own): the history's first change is the one with
    the smallest ``seq``; it starts from a snapshot when that change came from one (a
    bootstrap checkpoint, seq -1, precedes the log and does not count)."""
    first: tuple[int, int, str | None] | None = None
    for table in (FEATURES, CONFIGS, PARTITIONS, SCRAM, QUOTAS):
        row = conn.execute(
            select(table.c.seq, table.c.at_ms, table.c.snapshot_id)
            .where(table.c.cluster == cluster, table.c.source != ADMIN_SNAPSHOT)
            .order_by(table.c.seq)
            .limit(1)
        ).first()
        # one seq is one record or one snapshot: rows of the same seq share their provenance
        if row is not None and (first is None or row[0] < first[0]):
            first = (int(row[0]), int(row[1]), row[2])
    if first is None or first[2] is None or first[0] < 0:
        return None
    return first[1], first[2]


def first_admin_snapshot(conn: Connection, cluster: str) -> int | None:
    """When ``cluster``'s history comes from Admin API snapshots: the time of the first one
    (nothing is known before it); ``None`` for a metadata log history or none at all."""
    position = build_position(conn, cluster)
    if position is None or position[0] != ADMIN_SNAPSHOT:
        return None
    s = ADMIN_SNAPSHOTS
    first = conn.execute(select(func.min(s.c.at_ms)).where(s.c.cluster == cluster)).scalar()
    return None if first is None else int(first)


def _damaged_note(conn: Connection, cluster: str) -> str | None:
    """A note naming the archived metadata objects the history build skipped as damaged
    (recorded as integrity problems by the catalog build), or None."""
    from kafka_archive.catalog.tables import integrity_problems as ip

    rows = conn.execute(
        select(ip.c.subject_key, ip.c.start_offset, ip.c.end_offset)
        .where(ip.c.cluster == cluster, ip.c.detected_by == "metadata-history")
        .order_by(ip.c.start_offset)
    ).all()
    if not rows:
        return None
    named = "; ".join(f"{k} (offsets {a}..{b})" for k, a, b in rows[:5])
    more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
    return (
        f"the metadata history skips {len(rows)} damaged archived object(s): {named}{more}; "
        "what changed in those offsets may be missing (`catalog gaps` lists them)"
    )


def resolution_note(conn: Connection, cluster: str, at_ms: int) -> tuple[str, str | None]:
    """``(source, note)`` of ``cluster``'s history at ``at_ms``: admin snapshot histories are
    at snapshot resolution (the note names the snapshot used); metadata logs are exact, unless
    the build skipped damaged archived objects (the note names them)."""
    position = build_position(conn, cluster)
    if position is None or position[0] != ADMIN_SNAPSHOT:
        return ("metadata_log", _damaged_note(conn, cluster))
    s = ADMIN_SNAPSHOTS
    taken = conn.execute(
        select(s.c.at_ms)
        .where(s.c.cluster == cluster, s.c.at_ms <= at_ms)
        .order_by(s.c.at_ms.desc())
        .limit(1)
    ).scalar()
    if taken is None:
        return (ADMIN_SNAPSHOT, "at snapshot resolution: no Admin API snapshot before this time")
    return (
        ADMIN_SNAPSHOT,
        f"at snapshot resolution: state as of the Admin API snapshot at {format_ms(taken)}",
    )


def topic_at(conn: Connection, cluster: str, topic: str, at_ms: int) -> TopicState | None:
    """``topic`` as it was at ``at_ms`` (the incarnation alive then), ``None`` when no topic of
    that name existed then."""
    alive = [i for i in incarnations(conn, cluster, topic) if i.alive_at(at_ms)]
    if not alive:
        return None
    inc = alive[-1]
    p = PARTITIONS
    rows = conn.execute(
        select(p)
        .where(p.c.cluster == cluster, p.c.topic_id == inc.topic_id, p.c.at_ms <= at_ms)
        .order_by(p.c.seq)
    ).mappings()
    parts: dict[int, Any] = {}
    for r in rows:
        parts[int(r["partition"])] = r
    configs = _configs_at(conn, cluster, RESOURCE_TOPIC, topic, at_ms)
    as_of = max(
        [
            inc.created_ms,
            *(int(r["at_ms"]) for r in parts.values()),
            *(c[1] for c in configs.values()),
        ]
    )
    source, note = resolution_note(conn, cluster, at_ms)
    return TopicState(
        cluster=cluster,
        topic=topic,
        topic_id=inc.topic_id,
        partitions=len(parts),
        replicas={k: json.loads(r["replicas"]) for k, r in sorted(parts.items())},
        leaders={k: int(r["leader"]) for k, r in sorted(parts.items())},
        configs={k: v for k, (v, _ms) in sorted(configs.items())},
        as_of_ms=as_of,
        source=source,
        resolution_note=note,
    )


def _configs_at(
    conn: Connection, cluster: str, rtype: int, rname: str, at_ms: int
) -> dict[str, tuple[str, int]]:
    """``name -> (value, at_ms)`` of one resource's configs alive at ``at_ms``."""
    c = CONFIGS
    rows = conn.execute(
        select(c.c.name, c.c.value, c.c.at_ms)
        .where(
            c.c.cluster == cluster,
            c.c.resource_type == rtype,
            c.c.resource_name == rname,
            c.c.at_ms <= at_ms,
        )
        .order_by(c.c.seq)
    ).all()
    out: dict[str, tuple[str | None, int]] = {}
    for name, value, ms in rows:
        out[name] = (value, int(ms))
    return {k: (v, ms) for k, (v, ms) in out.items() if v is not None}


def resolved_configs(
    conn: Connection, cluster: str, state: TopicState, at_ms: int
) -> list[ResolvedConfig]:
    """Every config of ``state`` whose value is derivable: the overrides, then for the
    well-known topic configs the cluster default or Kafka's default (see
    :mod:`kafka_archive.metadata_history.defaults`), marking each value's source."""
    defaults = _configs_at(conn, cluster, RESOURCE_BROKER, "", at_ms)
    static = _configs_at(conn, cluster, RESOURCE_STATIC, "", at_ms)
    out = {k: ResolvedConfig(k, v, "topic") for k, v in state.configs.items()}
    for name, (synonym, kafka_default) in TOPIC_CONFIG_DEFAULTS.items():
        if name in out:
            continue
        if synonym in defaults:
            out[name] = ResolvedConfig(name, defaults[synonym][0], "cluster_default")
        elif name in static:
            out[name] = ResolvedConfig(name, static[name][0], "static_broker")
        else:
            out[name] = ResolvedConfig(name, kafka_default, "kafka_default")
    return [out[k] for k in sorted(out)]


#: the first event of a topic that already existed in the snapshot a history begins with
_EXISTING = "exists when the history begins (created earlier)"


def topic_history(conn: Connection, cluster: str, topic: str) -> list[HistoryEvent]:
    """What changed when for every incarnation of ``topic``: creation and deletion, partitions
    added, reassigned or given a new leader, config overrides set or deleted; in order, each
    with the record (type, version, offset = ``seq``) that caused it."""
    incs = incarnations(conn, cluster, topic)
    start = history_start(conn, cluster)
    events: list[HistoryEvent] = []
    for inc in incs:
        row = (
            conn.execute(
                select(TOPICS).where(TOPICS.c.cluster == cluster, TOPICS.c.topic_id == inc.topic_id)
            )
            .mappings()
            .one()
        )
        src = row["source"]
        what, snapshot_id = "created", None
        if start is not None and row["created_record"] == "SNAPSHOT" and inc.created_ms == start[0]:
            # not its creation: it already existed in the snapshot the history begins with
            what, snapshot_id = _EXISTING, start[1]
        events.append(
            HistoryEvent(
                inc.created_ms,
                inc.created_seq,
                inc.topic_id,
                what,
                {},
                row["created_record"],
                -1,
                snapshot_id,
                src,
            )
        )
        if inc.deleted_ms is not None and inc.deleted_seq is not None:
            events.append(
                HistoryEvent(
                    inc.deleted_ms,
                    inc.deleted_seq,
                    inc.topic_id,
                    "deleted",
                    {},
                    row["deleted_record"] or "",
                    -1,
                    None,
                    src,
                )
            )
        events += _partition_events(conn, cluster, inc.topic_id)
    events += _config_events(conn, cluster, topic, incs)
    # within one seq (a snapshot's changes) the topic's existence comes first, its end last
    rank = {"created": 0, _EXISTING: 0, "deleted": 2}
    events.sort(key=lambda e: (e.seq, e.at_ms, rank.get(e.what, 1), e.what))
    return events


def _partition_events(conn: Connection, cluster: str, topic_id: str) -> list[HistoryEvent]:
    p = PARTITIONS
    rows = conn.execute(
        select(p).where(p.c.cluster == cluster, p.c.topic_id == topic_id).order_by(p.c.seq)
    ).mappings()
    last: dict[int, Any] = {}
    out = []
    for r in rows:
        part = int(r["partition"])
        old = last.get(part)
        replicas, isr = json.loads(r["replicas"]), json.loads(r["isr"])
        detail: dict[str, Any] = {"partition": part}
        if old is None:
            what = f"partition {part} added"
            detail |= {"replicas": replicas, "leader": r["leader"], "isr": isr}
        else:
            changed = []
            if json.loads(old["replicas"]) != replicas:
                changed.append("replicas")
                detail |= {"replicas": replicas, "was_replicas": json.loads(old["replicas"])}
            if old["leader"] != r["leader"]:
                changed.append("leader")
                detail |= {"leader": r["leader"], "was_leader": old["leader"]}
            if json.loads(old["isr"]) != isr:
                changed.append("isr")
                detail |= {"isr": isr, "was_isr": json.loads(old["isr"])}
            what = f"partition {part}: " + (", ".join(changed) or "leader epoch") + " changed"
        last[part] = r
        out.append(_event(r, topic_id, what, detail))
    return out


def _config_events(
    conn: Connection, cluster: str, topic: str, incs: list[Incarnation]
) -> list[HistoryEvent]:
    c = CONFIGS
    rows = conn.execute(
        select(c)
        .where(
            c.c.cluster == cluster, c.c.resource_type == RESOURCE_TOPIC, c.c.resource_name == topic
        )
        .order_by(c.c.seq)
    ).mappings()
    last: dict[str, str | None] = {}
    out = []
    for r in rows:
        name, value = r["name"], r["value"]
        # the incarnation the change belongs to: the newest created at or before it (configs
        # of a new topic come just before its TopicRecord in the same batch)
        owner = _owner(incs, int(r["seq"]))
        topic_id = owner.topic_id if owner else ""
        detail = {"config": name, "value": value, "was": last.get(name)}
        what = f"config {name} deleted" if value is None else f"config {name} = {value}"
        last[name] = value
        out.append(_event(r, topic_id, what, detail))
    return out


def _owner(incs: list[Incarnation], seq: int) -> Incarnation | None:
    """The incarnation a topic config change at ``seq`` belongs to: the one alive then, else
    the next one created (CreateTopics writes a new topic's ConfigRecords just before its
    TopicRecord)."""
    for inc in incs:
        if inc.created_seq <= seq and (inc.deleted_seq is None or inc.deleted_seq >= seq):
            return inc
    return next((i for i in incs if i.created_seq > seq), None)


def _event(r: Any, topic_id: str, what: str, detail: dict[str, Any]) -> HistoryEvent:
    return HistoryEvent(
        int(r["at_ms"]),
        int(r["seq"]),
        topic_id,
        what,
        detail,
        r["record_type"],
        int(r["record_version"]),
        r["snapshot_id"],
        r["source"],
    )


def acls_at(conn: Connection, cluster: str, at_ms: int) -> list[AclAt]:
    """The ACL bindings alive in ``cluster`` at ``at_ms``."""
    a = ACLS
    rows = conn.execute(
        select(a)
        .where(
            a.c.cluster == cluster,
            a.c.created_ms <= at_ms,
            or_(a.c.deleted_ms.is_(None), and_(a.c.deleted_ms > at_ms)),
        )
        .order_by(a.c.resource_type, a.c.resource_name, a.c.principal, a.c.acl_id)
    ).mappings()
    return [
        AclAt(
            r["acl_id"],
            _name(_ACL_RESOURCE, r["resource_type"]),
            r["resource_name"],
            _name(_PATTERN, r["pattern_type"]),
            r["principal"],
            r["host"],
            _name(_OPERATION, r["operation"]),
            _name(_PERMISSION, r["permission_type"]),
            int(r["created_ms"]),
        )
        for r in rows
    ]


def topics_at(conn: Connection, cluster: str, at_ms: int) -> dict[str, str]:
    """``topic id -> name`` of every topic alive at ``at_ms``."""
    return load_state(conn, cluster, at_ms).topics
