"""Metadata log entries -> history rows, resumable and idempotent.

:func:`apply_entries` replays the decoded entries of one cluster's ``__cluster_metadata`` log
(snapshot records and log records, in offset order, as
``kafka_archive.archive.metadata_log.iter_archived_metadata`` yields them) into the history
tables:

* it starts from the state the tables already hold and skips every entry at or below the
  cluster's ``last_seq`` (``mh_build``): applying the same entries twice changes nothing, and a
  build continues after the last applied offset;
* a KRaft snapshot (entries with ``snapshot_id``) whose end offset lies beyond ``last_seq``
  means the log segments between were not archived (or were deleted): the snapshot's state
  replaces the current one, and the differences are written as changes at the snapshot's last
  offset, marked with the snapshot id;
* a log entry beyond ``last_seq + 1`` with no snapshot in between is a gap: applied anyway (the
  state may miss what happened in between) and reported;
* rows and the new position are written in one transaction per call (a crash leaves the
  previous position, and the next build redoes the work).

:func:`write_changes` is shared with the Admin API snapshots (source ``admin_snapshot``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, select, update

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.metadata_history.entries import MetadataEntryLike
from kafka_archive.metadata_history.models import (
    ACLS,
    BUILD,
    CONFIGS,
    FEATURES,
    PARTITIONS,
    QUOTAS,
    SCRAM,
    TOPICS,
)
from kafka_archive.metadata_history.state import (
    Acl,
    Change,
    ClusterState,
    PartitionInfo,
    apply_record,
    diff,
)
from kafka_archive.timeparse import now_ms

__all__ = [
    "ADMIN_SNAPSHOT",
    "METADATA_LOG",
    "ApplyReport",
    "Provenance",
    "apply_entries",
    "build_position",
    "load_state",
    "write_changes",
]

METADATA_LOG = "metadata_log"
ADMIN_SNAPSHOT = "admin_snapshot"


class SourceConflict(KafkaArchiveError, ValueError):
    """A cluster's history already comes from the other source (seq orders differ)."""


@dataclass(frozen=True, slots=True)
class Provenance:
    """What caused a group of changes."""

    seq: int
    at_ms: int
    source: str
    record_type: str
    record_version: int
    snapshot_id: str | None = None


@dataclass
class ApplyReport:
    """What one :func:`apply_entries` call did."""

    cluster: str
    entries: int = 0
    skipped: int = 0  # at or below the previous position
    changes: int = 0
    unknown: int = 0  # UNKNOWN records (undecodable type or version): reported, not applied
    snapshots: list[str] = field(default_factory=list)  # snapshot ids applied after a gap
    gaps: list[tuple[int, int]] = field(default_factory=list)  # missing offsets first..last
    errors: list[str] = field(default_factory=list)  # the decoder's error of UNKNOWN records
    last_seq: int = -1
    #: archived objects skipped as damaged (``{key, kind, first_offset, last_offset, reason,
    #: position}``; filled by the caller that read them, see
    #: :func:`kafka_archive.archive.metadata_log.iter_archived_metadata`)
    damaged: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "metadata_build",
            "cluster": self.cluster,
            "entries": self.entries,
            "skipped": self.skipped,
            "changes": self.changes,
            "unknown": self.unknown,
            "snapshots": self.snapshots,
            "gaps": [{"first": a, "last": b} for a, b in self.gaps],
            "errors": self.errors[:20],
            "last_offset": self.last_seq,
            "damaged": self.damaged,
        }


def build_position(conn: Connection, cluster: str) -> tuple[str, int] | None:
    """``(source, last_seq)`` of ``cluster``'s history, or ``None`` when none is built."""
    row = conn.execute(
        select(BUILD.c.source, BUILD.c.last_seq).where(BUILD.c.cluster == cluster)
    ).first()
    return None if row is None else (str(row[0]), int(row[1]))


def _latest(conn: Connection, table: Any, cluster: str, keys: list[str]) -> dict[Any, Any]:
    """Per key, the newest row of a versioned table (the rows in ``seq`` order, folded)."""
    out: dict[Any, Any] = {}
    rows = conn.execute(
        select(table).where(table.c.cluster == cluster).order_by(table.c.seq)
    ).mappings()
    for row in rows:
        key = tuple(row[k] for k in keys)
        out[key if len(key) > 1 else key[0]] = row
    return out


def load_state(conn: Connection, cluster: str, at_ms: int | None = None) -> ClusterState:
    """The state the tables hold for ``cluster`` (at ``at_ms``: rows with ``at_ms`` <= it)."""
    state = ClusterState()
    t = TOPICS
    q = select(t).where(t.c.cluster == cluster)
    for row in conn.execute(q).mappings():
        alive_from = at_ms is None or row["created_ms"] <= at_ms
        deleted = row["deleted_ms"] is not None and (at_ms is None or row["deleted_ms"] <= at_ms)
        if alive_from and not deleted:
            state.topics[row["topic_id"]] = row["name"]
    for key, row in _latest(
        conn, _upto(PARTITIONS, at_ms), cluster, ["topic_id", "partition"]
    ).items():
        if key[0] in state.topics:
            state.partitions[key] = PartitionInfo(
                tuple(json.loads(row["replicas"])),
                tuple(json.loads(row["isr"])),
                row["leader"],
                row["leader_epoch"],
            )
    keys = ["resource_type", "resource_name", "name"]
    for key, row in _latest(conn, _upto(CONFIGS, at_ms), cluster, keys).items():
        if row["value"] is not None:
            state.configs[key] = row["value"]
    for row in conn.execute(select(ACLS).where(ACLS.c.cluster == cluster)).mappings():
        alive_from = at_ms is None or row["created_ms"] <= at_ms
        deleted = row["deleted_ms"] is not None and (at_ms is None or row["deleted_ms"] <= at_ms)
        if alive_from and not deleted:
            state.acls[row["acl_id"]] = Acl(
                *(row[c] for c in ("resource_type", "resource_name", "pattern_type")),
                *(row[c] for c in ("principal", "host", "operation", "permission_type")),
            )
    for key, row in _latest(conn, _upto(SCRAM, at_ms), cluster, ["user_name", "mechanism"]).items():
        if row["iterations"] is not None:
            state.scram[key] = row["iterations"]
    for key, row in _latest(conn, _upto(QUOTAS, at_ms), cluster, ["entity", "quota_key"]).items():
        if row["value"] is not None:
            state.quotas[key] = row["value"]
    for key, row in _latest(conn, _upto(FEATURES, at_ms), cluster, ["name"]).items():
        if row["level"] is not None:
            state.features[key] = row["level"]
    return state


def _upto(table: Any, at_ms: int | None) -> Any:
    """``table`` limited to rows with ``at_ms <= at_ms`` (a subquery with the same columns)."""
    if at_ms is None:
        return table
    return select(table).where(table.c.at_ms <= at_ms).subquery()


def _prov(p: Provenance) -> dict[str, Any]:
    return {
        "seq": p.seq,
        "at_ms": p.at_ms,
        "source": p.source,
        "record_type": p.record_type,
        "record_version": p.record_version,
        "snapshot_id": p.snapshot_id,
    }


def _lifetime(
    conn: Connection,
    table: Any,
    key: dict[str, Any],
    values: dict[str, Any] | None,
    p: Provenance,
    *,
    records: bool,
) -> None:
    """Start (``values``) or end (``None``) the lifetime of one topic or ACL row
    (``records``: the table names the record types that started and ended it)."""
    if values is not None:
        extra = {"created_record": p.record_type} if records else {}
        conn.execute(
            table.insert().values(
                **key, **values, created_seq=p.seq, created_ms=p.at_ms, source=p.source, **extra
            )
        )
        return
    ended = {"deleted_record": p.record_type} if records else {}
    conn.execute(
        update(table)
        .where(*(table.c[k] == v for k, v in key.items()))
        .values(deleted_seq=p.seq, deleted_ms=p.at_ms, **ended)
    )


def write_changes(conn: Connection, cluster: str, changes: Iterable[Change], p: Provenance) -> int:
    """Insert the history rows of ``changes`` caused by ``p``; the number written."""
    n = 0
    for ch in changes:
        n += 1
        base = {"cluster": cluster}
        if ch.kind == "topic":
            name = None if ch.value is None else {"name": ch.value}
            _lifetime(conn, TOPICS, {**base, "topic_id": ch.key[0]}, name, p, records=True)
        elif ch.kind == "acl":
            acl = None if ch.value is None else dataclasses.asdict(ch.value)
            _lifetime(conn, ACLS, {**base, "acl_id": ch.key[0]}, acl, p, records=False)
        elif ch.kind == "partition":
            if ch.value is None:
                n -= 1  # a partition goes with its topic: the topic row records it
                continue
            info: PartitionInfo = ch.value
            conn.execute(
                PARTITIONS.insert().values(
                    **base,
                    topic_id=ch.key[0],
                    partition=ch.key[1],
                    replicas=json.dumps(list(info.replicas)),
                    isr=json.dumps(list(info.isr)),
                    leader=info.leader,
                    leader_epoch=info.leader_epoch,
                    **_prov(p),
                )
            )
        elif ch.kind == "config":
            rtype, rname, name = ch.key
            conn.execute(
                CONFIGS.insert().values(
                    **base,
                    resource_type=rtype,
                    resource_name=rname,
                    name=name,
                    value=ch.value,
                    **_prov(p),
                )
            )
        elif ch.kind == "scram":
            conn.execute(
                SCRAM.insert().values(
                    **base,
                    user_name=ch.key[0],
                    mechanism=ch.key[1],
                    iterations=ch.value,
                    **_prov(p),
                )
            )
        elif ch.kind == "quota":
            conn.execute(
                QUOTAS.insert().values(
                    **base, entity=ch.key[0], quota_key=ch.key[1], value=ch.value, **_prov(p)
                )
            )
        elif ch.kind == "feature":
            conn.execute(
                FEATURES.insert().values(**base, name=ch.key[0], level=ch.value, **_prov(p))
            )
    return n


def set_position(
    conn: Connection, cluster: str, source: str, seq: int, at_ms: int, snapshot_id: str | None
) -> None:
    """Record how far ``cluster``'s history is built (same transaction as its rows)."""
    values = {
        "source": source,
        "last_seq": seq,
        "last_ms": at_ms,
        "snapshot_id": snapshot_id,
        "updated_at_ms": now_ms(),
    }
    done = conn.execute(update(BUILD).where(BUILD.c.cluster == cluster).values(**values))
    if not done.rowcount:
        conn.execute(BUILD.insert().values(cluster=cluster, **values))


def _snapshot_end(snapshot_id: str) -> int:
    """The last offset a snapshot ``<endOffset>-<epoch>`` covers (endOffset is exclusive);
    -1 for ``bootstrap`` (the bootstrap checkpoint precedes the log, which repeats it)."""
    head = snapshot_id.split("-", 1)[0]
    return int(head) - 1 if head.isdigit() else -1


def apply_entries(
    conn: Connection, cluster: str, entries: Iterable[MetadataEntryLike]
) -> ApplyReport:
    """Replay ``entries`` of ``cluster`` into the history tables on ``conn`` (the caller owns
    the transaction: commit once after this returns). See the module docstring."""
    report = ApplyReport(cluster)
    position = build_position(conn, cluster)
    if position is not None and position[0] != METADATA_LOG:
        raise SourceConflict(
            f"the history of cluster {cluster!r} comes from {position[0]} snapshots; "
            "a cluster's history has one source"
        )
    last = -1 if position is None else position[1]
    state = load_state(conn, cluster)
    last_ms, last_snapshot = 0, None
    pending: tuple[str, ClusterState, int, int] | None = None  # snapshot being read

    def finish_snapshot() -> None:
        nonlocal state, last, last_ms, last_snapshot, pending
        if pending is None:
            return
        snap_id, snap_state, ts, version = pending
        pending = None
        seq = _snapshot_end(snap_id)
        changes = diff(state, snap_state)
        p = Provenance(seq, ts, METADATA_LOG, "SNAPSHOT", version, snap_id)
        report.changes += write_changes(conn, cluster, changes, p)
        report.snapshots.append(snap_id)
        state, last, last_ms, last_snapshot = snap_state, seq, ts, snap_id

    for entry in entries:
        report.entries += 1
        if entry.snapshot_id is not None:
            if pending is not None and pending[0] != entry.snapshot_id:
                finish_snapshot()
            if _snapshot_end(entry.snapshot_id) <= last:
                report.skipped += 1  # the log already gave us this state
                continue
            if pending is None:
                pending = (entry.snapshot_id, ClusterState(), entry.timestamp_ms, 0)
            snap_id, snap_state, ts, _v = pending
            rec = entry.record
            if rec is not None and _known(rec, report):
                apply_record(snap_state, rec.type_name, rec.data)
            pending = (snap_id, snap_state, max(ts, entry.timestamp_ms), 0)
            continue
        finish_snapshot()
        if entry.offset <= last:
            report.skipped += 1
            continue
        if last >= 0 and entry.offset > last + 1:
            report.gaps.append((last + 1, entry.offset - 1))
        rec = entry.record
        if rec is not None and _known(rec, report):
            changes = apply_record(state, rec.type_name, rec.data)
            p = Provenance(
                entry.offset, entry.timestamp_ms, METADATA_LOG, rec.type_name, rec.version
            )
            report.changes += write_changes(conn, cluster, changes, p)
        last, last_ms = entry.offset, entry.timestamp_ms
    finish_snapshot()
    report.last_seq = last
    if last >= 0 and (position is None or last != position[1]):
        set_position(conn, cluster, METADATA_LOG, last, last_ms, last_snapshot)
    return report


def _known(rec: Any, report: ApplyReport) -> bool:
    if rec.type_name == "UNKNOWN":
        report.unknown += 1
        if rec.error:
            report.errors.append(rec.error)
        return False
    return True
