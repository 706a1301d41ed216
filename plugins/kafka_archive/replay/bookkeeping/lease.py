"""One live run per replay: a lease in the catalog.

Two identical ``replay run`` started at once derive the same replay id. Kafka's fencing (the
run claims of :mod:`.progress`) keeps the *data* exactly once, but both runs used to report
``done``. The lease makes the outcome visible: the first run to insert the ``replay_leases`` row
of the replay id proceeds; the other is refused with :class:`ReplayBusyError` (a non-zero exit)
naming the holder.

A lease is renewed (``heartbeat_ms``) every :data:`HEARTBEAT_S` by a daemon thread while the run
works, and released when it ends (success or failure). A holder that died without releasing
(kill -9, a vanished machine) must not block the replay forever, so a lease can be taken over
when it is **stale**: its holder is on this host and no process has its pid, or it has not been
renewed for :data:`LEASE_TTL_S`. Take-over is a compare-and-swap on the old owner and heartbeat,
so of two runs taking over the same stale lease exactly one wins.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass
from types import TracebackType

from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from kafka_archive.catalog.liveness import Heartbeat, pid_alive
from kafka_archive.replay.bookkeeping.tables import replay_leases
from kafka_archive.replay.errors import ReplayError
from kafka_archive.timeparse import now_ms

__all__ = ["HEARTBEAT_S", "LEASE_TTL_S", "ReplayBusyError", "ReplayLease", "run_alive"]

#: a lease not renewed for this long is stale (any host)
LEASE_TTL_S = 60.0
#: how often a holder renews its lease
HEARTBEAT_S = 10.0


class ReplayBusyError(ReplayError):
    """Another run holds this replay."""

    default_hint = (
        "Let the other run finish (see `kafka-archive replay status`); if it is gone, run again: "
        f"its lease expires {LEASE_TTL_S:.0f} s after its last heartbeat."
    )


@dataclass(frozen=True, slots=True)
class _Holder:
    owner: str
    host: str
    pid: int
    acquired_at_ms: int
    heartbeat_ms: int

    def stale(self, now_ms: int, host: str) -> bool:
        if self.host == host and not pid_alive(self.pid):
            return True
        return now_ms - self.heartbeat_ms > LEASE_TTL_S * 1000


def run_alive(engine: Engine, replay_id: str) -> bool:
    """Whether a live run holds ``replay_id`` (a lease row that is not stale): a ``running``
    replay without one was killed (``replay status`` shows it ``interrupted``)."""
    lease = ReplayLease(engine, replay_id)
    holder = lease._holder()
    return holder is not None and not holder.stale(now_ms(), lease.host)


class ReplayLease:
    """The lease of ``replay_id`` in the catalog behind ``engine``; use as a context manager
    (acquire on enter, release on exit)."""

    def __init__(self, engine: Engine, replay_id: str) -> None:
        self.engine = engine
        self.replay_id = replay_id
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.owner = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:8]}"
        self._heartbeat: Heartbeat | None = None

    def _holder(self) -> _Holder | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                select(
                    replay_leases.c.owner,
                    replay_leases.c.host,
                    replay_leases.c.pid,
                    replay_leases.c.acquired_at_ms,
                    replay_leases.c.heartbeat_ms,
                ).where(replay_leases.c.replay_id == self.replay_id)
            ).first()
        return None if row is None else _Holder(*row)

    def acquire(self) -> None:
        """Take the lease, or take over a stale one.

        Raises:
            ReplayBusyError: a live run holds it.
        """
        for _attempt in range(3):
            now = now_ms()
            try:
                with self.engine.begin() as conn:
                    conn.execute(
                        insert(replay_leases).values(
                            replay_id=self.replay_id,
                            owner=self.owner,
                            host=self.host,
                            pid=self.pid,
                            acquired_at_ms=now,
                            heartbeat_ms=now,
                        )
                    )
                break
            except IntegrityError:
                pass
            holder = self._holder()
            if holder is None:
                continue  # released meanwhile: insert again
            if not holder.stale(now, self.host):
                since = time.strftime(
                    "%Y-%m-%d %H:%M:%S", time.gmtime(holder.acquired_at_ms / 1000)
                )
                raise ReplayBusyError(
                    f"replay {self.replay_id} is already running: held by process "
                    f"{holder.pid} on {holder.host} since {since} UTC (last heartbeat "
                    f"{max(0, now - holder.heartbeat_ms) / 1000:.0f} s ago)",
                    holder_host=holder.host,
                    holder_pid=holder.pid,
                )
            with self.engine.begin() as conn:
                taken = conn.execute(
                    update(replay_leases)
                    .where(
                        replay_leases.c.replay_id == self.replay_id,
                        replay_leases.c.owner == holder.owner,
                        replay_leases.c.heartbeat_ms == holder.heartbeat_ms,
                    )
                    .values(
                        owner=self.owner,
                        host=self.host,
                        pid=self.pid,
                        acquired_at_ms=now,
                        heartbeat_ms=now,
                    )
                ).rowcount
            if taken == 1:
                break
            # another run took it over (or it renewed) in between: look again
        else:
            raise ReplayBusyError(f"replay {self.replay_id} is being taken over by another run")
        self._heartbeat = Heartbeat(self._renew, HEARTBEAT_S, f"replay-lease-{self.replay_id}")
        self._heartbeat.start()

    def _renew(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(replay_leases)
                .where(
                    replay_leases.c.replay_id == self.replay_id,
                    replay_leases.c.owner == self.owner,
                )
                .values(heartbeat_ms=now_ms())
            )

    def release(self) -> None:
        """Stop renewing and drop the lease (only if this run still holds it)."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
            self._heartbeat = None
        with self.engine.begin() as conn:
            conn.execute(
                delete(replay_leases).where(
                    replay_leases.c.replay_id == self.replay_id,
                    replay_leases.c.owner == self.owner,
                )
            )

    def __enter__(self) -> ReplayLease:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
