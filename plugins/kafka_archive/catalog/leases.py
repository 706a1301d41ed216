"""Object leases: offset ranges a replay or export needs, which prune never deletes.

A job that will read archived objects takes a lease (rows of ``object_leases``, one per
partition range) under a **holder** name (``replay:<replay id>``, ``export:<id>``) before it
trusts its plan, and releases it when it ends. Prune (:mod:`kafka_archive.catalog.prune`)
leaves every unit a live lease touches.

* A **running** job's lease is tied to its process (``pid`` > 0) and renewed every
  :data:`HEARTBEAT_S` while it works (:meth:`ObjectLeases.hold`); it is stale once not renewed
  for :data:`RUNNING_TTL_S`, or at once when its process on this host is gone (kill -9).
* A **queued** job's lease (a replay planned by the DAG and waiting for its run task) is not
  tied to a process (``pid`` 0) and lives :data:`QUEUED_TTL_S` unless the run takes it over
  (taking a lease replaces the holder's earlier rows).
* A **durable** lease (a replay's: ``durable=True``) is not tied to a process either and never
  expires (:data:`DURABLE_EXPIRY_MS`): a replay killed mid-way is resumable, so the data it
  still needs stays until the replay completes or is abandoned, which release it. A running
  replay's lease used to be tied to its process, and prune removed what the killed replay still
  needed at once; the re-run then skipped those offsets silently.

Why prune cannot delete what a job is about to read: both sides write before they read. A
job commits its lease, then checks that nothing of its plan is pruned
(:func:`pruned_in`); prune records its pruned ranges (in the transaction that marks the
segments), then checks for leases before committing (and on PostgreSQL locks
``object_leases`` for that transaction, so a lease insert waits for it). Whichever commits
second sees the other: the job refuses its stale plan, or prune leaves the leased unit.
"""

from __future__ import annotations

import os
import socket
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, Row, delete, insert, select, update

from kafka_archive import timeparse
from kafka_archive.catalog.liveness import Heartbeat, process_gone
from kafka_archive.catalog.tables import object_leases, pruned_ranges

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

__all__ = [
    "DURABLE_EXPIRY_MS",
    "HEARTBEAT_S",
    "QUEUED_TTL_S",
    "RUNNING_TTL_S",
    "LeaseRange",
    "ObjectLeases",
    "live_leases",
    "pruned_in",
]

#: a running job's lease not renewed for this long is stale
RUNNING_TTL_S = 120.0
#: how often a running job renews its lease
HEARTBEAT_S = 15.0
#: how long a queued job's lease lives without its run taking it over
QUEUED_TTL_S = 6 * 3600.0
#: the expiry of a durable lease: never (released explicitly)
DURABLE_EXPIRY_MS = 2**62


@dataclass(frozen=True, slots=True)
class LeaseRange:
    """Inclusive offsets ``first_offset..last_offset`` of one partition."""

    cluster: str
    topic: str
    partition: int
    first_offset: int
    last_offset: int


def live_leases(
    session: Session | Connection, cluster: str, topic: str, *, now_ms: int | None = None
) -> dict[int, list[tuple[int, int]]]:
    """Per partition of ``cluster/topic``: the inclusive offset ranges of live leases."""
    now = timeparse.now_ms() if now_ms is None else now_ms
    out: dict[int, list[tuple[int, int]]] = defaultdict(list)
    rows = session.execute(
        select(
            object_leases.c.partition,
            object_leases.c.first_offset,
            object_leases.c.last_offset,
            object_leases.c.host,
            object_leases.c.pid,
        ).where(
            object_leases.c.cluster == cluster,
            object_leases.c.topic == topic,
            object_leases.c.expires_at_ms > now,
        )
    )
    for part, lo, hi, on_host, pid in rows:
        if process_gone(on_host, pid):
            continue  # its process is gone (kill -9): stale at once
        out[int(part)].append((int(lo), int(hi)))
    return dict(out)


def pruned_in(session: Session | Connection, ranges: Sequence[LeaseRange]) -> list[Row[Any]]:
    """The pruned ranges (planned or done) that overlap any of ``ranges``: rows of
    ``pruned_ranges`` (Core: every replay asks before it starts, issue 27)."""
    p = pruned_ranges.c
    found: list[Row[Any]] = []
    for r in ranges:
        found.extend(
            session.execute(
                select(pruned_ranges).where(
                    p.cluster == r.cluster,
                    p.topic == r.topic,
                    p.partition == r.partition,
                    p.first_offset <= r.last_offset,
                    p.last_offset >= r.first_offset,
                )
            )
        )
    return found


class ObjectLeases:
    """Taking, renewing and releasing the leases of the catalog behind ``engine``."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.host = socket.gethostname()

    def take(
        self,
        holder: str,
        ranges: Sequence[LeaseRange],
        *,
        queued: bool = False,
        durable: bool = False,
    ) -> None:
        """Lease ``ranges`` for ``holder`` (replacing its earlier rows, e.g. the queued lease
        of the plan this run executes); ``queued``: not tied to this process, for
        :data:`QUEUED_TTL_S`; ``durable``: not tied to this process, until released."""
        now = timeparse.now_ms()
        ttl = QUEUED_TTL_S if queued else RUNNING_TTL_S
        expires = DURABLE_EXPIRY_MS if durable else now + int(ttl * 1000)
        rows = [
            {
                "holder": holder,
                "cluster": r.cluster,
                "topic": r.topic,
                "partition": r.partition,
                "first_offset": r.first_offset,
                "last_offset": r.last_offset,
                "host": self.host,
                "pid": 0 if queued or durable else os.getpid(),
                "acquired_at_ms": now,
                "heartbeat_ms": now,
                "expires_at_ms": expires,
            }
            for r in ranges
        ]
        with self.engine.begin() as conn:
            conn.execute(delete(object_leases).where(object_leases.c.holder == holder))
            if rows:
                conn.execute(insert(object_leases), rows)

    def renew(self, holder: str) -> None:
        now = timeparse.now_ms()
        with self.engine.begin() as conn:
            conn.execute(
                update(object_leases)
                .where(object_leases.c.holder == holder, object_leases.c.pid == os.getpid())
                .values(heartbeat_ms=now, expires_at_ms=now + int(RUNNING_TTL_S * 1000))
            )

    def release(self, holder: str) -> None:
        with self.engine.begin() as conn:
            conn.execute(delete(object_leases).where(object_leases.c.holder == holder))

    @contextmanager
    def hold(self, holder: str, ranges: Sequence[LeaseRange]) -> Iterator[None]:
        """Lease ``ranges`` while the block runs (renewed by a daemon thread), then release."""
        self.take(holder, ranges)
        try:
            with Heartbeat(lambda: self.renew(holder), HEARTBEAT_S, f"lease-{holder}"):
                yield
        finally:
            self.release(holder)
