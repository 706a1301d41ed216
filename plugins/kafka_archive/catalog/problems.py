"""Integrity is remembered: what the catalog refused, and which builds died.

**Problems** (table ``integrity_problems``, model
:class:`~kafka_archive.catalog.models.IntegrityProblem`). Every archived object or manifest the
catalog will not serve is recorded with its key, the byte position when known, and the reason:

* ``corrupt``: the object's bytes differ from the checksum its manifest recorded (the build
  retries it on every run: a repaired object is cataloged and its problem deleted);
* ``misfiled``: sound bytes that do not belong where the manifest says
  (:mod:`kafka_archive.catalog.identity`);
* ``unreadable-manifest``: a manifest that is not JSON or fails its schema;
* ``unreadable``: the object the manifest lists cannot be read (missing from the store);
* ``missing-object`` / ``changed``: found by ``catalog verify``: a cataloged object (or its
  manifest) is gone, or its size changed, since it was cataloged.

(Segments whose bytes match their manifest but fail a batch check stay what they were: a
``segments`` row with status ``corrupt``; they are counted and shown alongside.)

A problem is keyed by ``(manifest key, kind)``: each manifest is one claim about the archive,
and a misfiled manifest must not be cleared by the object it points at being cataloged under
its own manifest. Seeing a problem again updates ``last_seen_ms`` and its reason; the build
deletes the build-detected problems of a manifest it catalogs, ``verify`` the ones it
detected for a segment that now passes.

**Stale builds.** A build's ``build_runs`` row names its owner (host and pid) and carries a
heartbeat (``heartbeat_ms``, renewed at least every :data:`HEARTBEAT_MS` while it works). The
next build marks a ``running`` row ``stale`` when its owner is provably gone (same host, and no
process has its pid) or it has not beaten for :data:`STALE_AFTER_MS` (any host: a killed
container or a vanished machine; ten heartbeats missed, so a slow but live build is not
declared dead). Rows of builds before this rule (no heartbeat) fall under the timeout, counted
from their start. Marking is advisory: a build's writes are idempotent per partition, so even a
wrong ``stale`` never damages the catalog.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Final

from sqlalchemy import Connection, Row, delete, func, select, update

from kafka_archive import timeparse
from kafka_archive.catalog import tables
from kafka_archive.catalog.liveness import process_gone

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from kafka_archive.catalog.db import Catalog
    from kafka_archive.catalog.refs import SegmentRef

__all__ = [
    "HEARTBEAT_MS",
    "STALE_AFTER_MS",
    "Heartbeat",
    "Problem",
    "clear_problems",
    "mark_stale_runs",
    "problem_counts",
    "problem_rows",
    "record_problems",
]

# Core columns (the ORM only where rows are added: record_problems): the replay plan reads the
# problems before every replay's first record (issue 27)
_IP, _BR = tables.integrity_problems.c, tables.build_runs.c

HEARTBEAT_MS: Final = 30_000
STALE_AFTER_MS: Final = 10 * HEARTBEAT_MS


@dataclass(frozen=True, slots=True)
class Problem:
    """One refused manifest/object (see the module docstring for ``kind``).

    ``start_offset``/``end_offset`` are the offsets the manifest claims, inclusive (as
    :class:`~kafka_archive.catalog.queries.GapEntry`), ``None`` when unknown."""

    kind: str
    manifest_key: str
    reason: str
    object_key: str | None = None
    cluster: str | None = None
    topic: str | None = None
    partition: int | None = None
    start_offset: int | None = None
    end_offset: int | None = None
    position: int | None = None

    @classmethod
    def of_ref(
        cls, kind: str, ref: SegmentRef, reason: str, position: int | None = None
    ) -> Problem:
        """A problem of the segment ``ref`` describes (its claimed offsets)."""
        last = ref.end_offset - 1 if ref.end_offset > ref.base_offset else ref.base_offset
        return cls(
            kind,
            ref.manifest_key,
            reason,
            ref.object_key,
            ref.cluster,
            ref.topic,
            ref.partition,
            ref.base_offset,
            last,
            position,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def record_problems(
    session: Session, problems: Iterable[Problem], detected_by: str, now_ms: int | None = None
) -> int:
    """Insert or refresh ``problems`` (one row per manifest key and kind); returns how many."""
    from kafka_archive.catalog.models import IntegrityProblem

    now = timeparse.now_ms() if now_ms is None else now_ms
    n = 0
    for p in problems:
        n += 1
        row = session.execute(
            select(IntegrityProblem).where(
                IntegrityProblem.subject_key == p.manifest_key, IntegrityProblem.kind == p.kind
            )
        ).scalar_one_or_none()
        values = dict(
            manifest_key=p.manifest_key,
            object_key=p.object_key,
            cluster=p.cluster,
            topic=p.topic,
            partition=p.partition,
            start_offset=p.start_offset,
            end_offset=p.end_offset,
            position=p.position,
            reason=p.reason,
            detected_by=detected_by,
            last_seen_ms=now,
        )
        if row is None:
            session.add(
                IntegrityProblem(
                    kind=p.kind, subject_key=p.manifest_key, first_seen_ms=now, **values
                )
            )
        else:
            for k, v in values.items():
                setattr(row, k, v)
    session.flush()
    return n


def clear_problems(
    session: Session,
    manifest_keys: Sequence[str],
    detected_by: str,
    kinds: Sequence[str] | None = None,
) -> None:
    """Delete the problems ``detected_by`` recorded for ``manifest_keys`` (now fine); only
    those of ``kinds`` when given (a check clears only what it can see)."""
    for i in range(0, len(manifest_keys), 500):
        q = delete(tables.integrity_problems).where(
            _IP.subject_key.in_(manifest_keys[i : i + 500]),
            _IP.detected_by == detected_by,
        )
        if kinds is not None:
            q = q.where(_IP.kind.in_(list(kinds)))
        session.execute(q)


def problem_rows(session: Session | Connection, cluster: str, topic: str | None) -> list[Row[Any]]:
    """The recorded problems of ``cluster`` (one topic or all), by topic, partition, offset:
    rows of ``integrity_problems`` (Core: every replay plan reads them, issue 27)."""
    q = select(tables.integrity_problems).where(_IP.cluster == cluster)
    if topic is not None:
        q = q.where(_IP.topic == topic)
    q = q.order_by(_IP.topic, _IP.partition, _IP.start_offset, _IP.subject_key)
    return list(session.execute(q))


def problem_counts(session: Session | Connection, cluster: str) -> dict[tuple[str, int], int]:
    """Recorded problems per ``(topic, partition)`` of ``cluster``."""
    ip = _IP
    rows = session.execute(
        select(ip.topic, ip.partition, func.count(ip.id))
        .where(ip.cluster == cluster, ip.topic.is_not(None), ip.partition.is_not(None))
        .group_by(ip.topic, ip.partition)
    ).all()
    return {(str(t), int(p)): int(n) for t, p, n in rows if p is not None}


# ---------------------------------------------------------------------------------------------
# build liveness


def mark_stale_runs(session: Session | Connection, now_ms: int | None = None) -> list[int]:
    """Mark ``running`` builds whose owner is gone ``stale`` (rule: module docstring); returns
    their ids."""
    now = timeparse.now_ms() if now_ms is None else now_ms
    stale = []
    for run in session.execute(select(tables.build_runs).where(_BR.status == "running")):
        last = run.heartbeat_ms if run.heartbeat_ms is not None else run.started_at_ms
        if process_gone(run.owner_host, run.owner_pid) or now - last > STALE_AFTER_MS:
            stale.append(run.id)
    if stale:
        session.execute(
            update(tables.build_runs)
            .where(_BR.id.in_(stale), _BR.status == "running")
            .values(status="stale", finished_at_ms=now)
        )
    return stale


class Heartbeat:
    """Renews ``heartbeat_ms`` of build ``run_id`` at most every :data:`HEARTBEAT_MS`.

    A build marked ``stale`` by mistake (it went quiet longer than :data:`STALE_AFTER_MS`,
    e.g. one huge object on a slow store) keeps working and its final status overwrites
    ``stale``: the mark never stops or undoes a build."""

    def __init__(self, catalog: Catalog, run_id: int | None) -> None:
        self.catalog, self.run_id = catalog, run_id
        self._last = timeparse.now_ms()

    def beat(self) -> None:
        now = timeparse.now_ms()
        if self.run_id is None or now - self._last < HEARTBEAT_MS:
            return
        self._last = now
        with self.catalog.session() as s, s.begin():
            s.execute(
                update(tables.build_runs).where(_BR.id == self.run_id).values(heartbeat_ms=now)
            )
