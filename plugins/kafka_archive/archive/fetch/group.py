"""Sharing a cluster's partitions among several fetch archivers: Kafka consumer-group
membership.

Archivers started with one ``--group NAME`` join the Kafka consumer group ``NAME`` (librdkafka,
through confluent-kafka): the group coordinator, a broker, hands each member a share of the
selected partitions (``roundrobin``: members' shares differ by at most one partition), takes a
member's share back when it leaves, and hands a dead member's share to the others once its
session times out (``session.timeout.ms``). The group is used for membership only: the member
fetches nothing through it (its partitions are assigned an empty set locally: librdkafka never
fetches or asks for committed offsets) and commits nothing; the batches come through our own
protocol client (:mod:`~kafka_archive.archive.fetch.source`) and progress stays what the store
holds.

Why the group and not leases in the store: every Kafka cluster, managed or not, has a
coordinator that already does failure detection (heartbeats, session timeout), assignment and
rebalancing, with no clock shared between processes; it needs one ACL (``Read`` on the group).
Store leases would need a lease protocol over conditional writes and clocks we do not control.

Fencing: a member stops writing a partition before it is given to another. Revocation is
eager (a rebalance waits until every member has given up its partitions): the
``on_revoke`` callback blocks until the fetch loop has uploaded the partition's open segment
and dropped it (:meth:`Ownership.revoke`). A member that is not asked (killed, or cut off from
the coordinator while still reaching the store) is covered by the store's fence
(:mod:`~kafka_archive.archive.fetch.claims`): whatever it still uploads cannot double or hole
the partition's chain of segments.

:class:`Ownership` is the hand-over between the group's callbacks (on the membership thread)
and the fetch loop (on the run's thread), and is what the unit tests drive.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Protocol

from kafka_archive.errors import KafkaArchiveError

__all__ = [
    "DEFAULT_SESSION_TIMEOUT_MS",
    "GroupFailed",
    "GroupMembership",
    "Membership",
    "Ownership",
]

log = logging.getLogger(__name__)

Key = tuple[str, int]

DEFAULT_SESSION_TIMEOUT_MS: Final = 30_000

#: librdkafka's codes of a group that can never be joined (the principal lacks Read on it)
_FATAL_GROUP_ERRORS: Final = frozenset({30, 29})  # GROUP_ / TOPIC_AUTHORIZATION_FAILED


class GroupFailed(KafkaArchiveError):
    """The group cannot be joined (named with why): the run stops, nothing is archived by it."""

    default_hint = (
        "with --group the principal needs Read on the group (docs/archivers.md); check "
        "the group name and the ACLs"
    )


class Ownership:
    """Which partitions this process may archive, as the group hands them over (thread-safe).

    The membership side calls :meth:`assign` and :meth:`revoke`; the fetch loop calls
    :meth:`changes` each round, opens what was added, finishes and drops what is revoked, and
    then calls :meth:`released`.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._owned: set[Key] = set()
        self._added: set[Key] = set()  # owned, not yet taken by the fetch loop
        self._held: set[Key] = set()  # taken by the fetch loop
        self._revoking: set[Key] = set()  # held, to be given up
        self._closed = False
        self._assignments = 0
        #: why the group cannot be joined (the fetch loop raises :class:`GroupFailed`)
        self.error: str | None = None

    # -- the membership side -----------------------------------------------------------------

    def assign(self, keys: Iterable[Key]) -> None:
        """The group gave these partitions (added to the ones owned)."""
        with self._cond:
            new = set(keys) - self._owned
            self._owned |= new
            self._added |= new - self._held
            self._assignments += 1
            self._cond.notify_all()

    def revoke(self, keys: Iterable[Key], timeout_s: float) -> bool:
        """The group takes these partitions back: returns once the fetch loop has given up
        every one it had taken (or at once when closed); False when ``timeout_s`` passed
        first (the store's fence still holds)."""
        with self._cond:
            keys = set(keys) & self._owned
            self._owned -= keys
            self._added -= keys  # never opened: nothing to give up
            wait = keys & self._held
            self._revoking |= wait
            self._cond.notify_all()
            return self._cond.wait_for(
                lambda: self._closed or not (wait & self._revoking), timeout=timeout_s
            )

    def fail(self, why: str) -> None:
        """The group cannot be joined: the fetch loop stops with :class:`GroupFailed`."""
        with self._cond:
            self.error = why
            self._cond.notify_all()

    def close(self) -> None:
        """The run ends: nothing waits for the fetch loop any more."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    # -- the fetch loop's side ---------------------------------------------------------------

    def changes(self) -> tuple[set[Key], set[Key]]:
        """``(added, revoked)`` since the last call: the partitions to open, and those to
        finish, drop and :meth:`released`."""
        with self._cond:
            added, self._added = self._added, set()
            self._held |= added
            return added, set(self._revoking)

    def released(self, keys: Iterable[Key]) -> None:
        """The fetch loop no longer writes these partitions."""
        with self._cond:
            keys = set(keys)
            self._revoking -= keys
            self._held -= keys
            self._cond.notify_all()

    def owns(self, key: Key) -> bool:
        with self._cond:
            return key in self._owned

    @property
    def settled(self) -> bool:
        """Whether the group has given an assignment yet (possibly empty)."""
        with self._cond:
            return self._assignments > 0


class Membership(Protocol):
    """What the fetch loop needs of a group: an :class:`Ownership` kept up to date between
    :meth:`start` and :meth:`close`."""

    ownership: Ownership

    def start(self, topics: Sequence[str]) -> None: ...

    def close(self) -> None: ...


class GroupMembership:
    """Membership of the Kafka consumer group ``group`` (module docstring), on a thread of its
    own that polls the consumer (heartbeats and callbacks) every ``poll_s``.

    ``conf``: librdkafka client settings with ``bootstrap.servers`` (the same as the fetch
    client's: security settings are shared). ``revoke_timeout_s``: how long a revocation waits
    for the fetch loop (an upload in progress) before it lets the rebalance go on.
    """

    def __init__(
        self,
        conf: Mapping[str, Any],
        group: str,
        *,
        session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS,
        revoke_timeout_s: float = 120.0,
        poll_s: float = 0.5,
    ) -> None:
        self.ownership = Ownership()
        self.group = group
        self._conf = dict(conf)
        self._session_timeout_ms = session_timeout_ms
        self._revoke_timeout_s = revoke_timeout_s
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: Any = None

    def start(self, topics: Sequence[str]) -> None:
        """Join the group for ``topics`` (raises ``KafkaException`` for bad settings)."""
        from confluent_kafka import Consumer

        from kafka_archive.client_log import CLIENT_LOG_SETTINGS
        from kafka_archive.kafka_protocol.config import librdkafka_config

        conf = librdkafka_config(
            {
                **CLIENT_LOG_SETTINGS,
                **self._conf,
                "group.id": self.group,
                "client.id": "kafka-archive-fetch-archiver",
                "enable.auto.commit": "false",
                "enable.auto.offset.store": "false",
                "partition.assignment.strategy": "roundrobin",
                "session.timeout.ms": str(self._session_timeout_ms),
                "heartbeat.interval.ms": str(max(100, self._session_timeout_ms // 10)),
                # the run's thread may be busy uploading; the poll thread never is
                "max.poll.interval.ms": str(max(300_000, self._session_timeout_ms)),
            }
        )
        self._consumer = Consumer(conf)
        self._consumer.subscribe(
            list(topics), on_assign=self._on_assign, on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )  # fmt: skip
        self._thread = threading.Thread(
            target=self._poll, name=f"kafka-archive-group-{self.group}", daemon=True
        )
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self._consumer.poll(self._poll_s)  # nothing assigned: callbacks, errors
            except Exception as exc:  # a group error: logged, membership goes on
                log.warning("kafka-archive: group %s: %s", self.group, exc)
                continue
            err = msg.error() if msg is not None else None
            if err is not None:
                self.on_error(err.code(), err.fatal(), err.str())

    def on_error(self, code: int, fatal: bool, text: str) -> None:
        """A consumer error: one that means the group can never be joined stops the run."""
        if fatal or code in _FATAL_GROUP_ERRORS:
            self.ownership.fail(f"group {self.group}: {text}")
        else:
            log.warning("kafka-archive: group %s: %s", self.group, text)

    @staticmethod
    def _keys(partitions: Iterable[Any]) -> list[Key]:
        return [(tp.topic, tp.partition) for tp in partitions]

    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        keys = self._keys(partitions)
        log.info("kafka-archive: group %s: assigned %s", self.group, keys)
        consumer.assign([])  # membership only: librdkafka fetches nothing
        self.ownership.assign(keys)

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        keys = self._keys(partitions)
        log.info("kafka-archive: group %s: revoked %s", self.group, keys)
        if not self.ownership.revoke(keys, self._revoke_timeout_s):
            log.warning(
                "kafka-archive: group %s: partitions still being uploaded after %g s were "
                "handed over (the store's claims keep them whole)",
                self.group,
                self._revoke_timeout_s,
            )
        consumer.unassign()

    def _on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        # the session expired: another member may already have them; stop at once (what is
        # still uploaded meets the store's fence)
        keys = self._keys(partitions)
        log.warning("kafka-archive: group %s: lost %s (session expired)", self.group, keys)
        self.ownership.revoke(keys, 0)
        consumer.unassign()

    def close(self) -> None:
        """Leave the group (its partitions go to the other members at once)."""
        self.ownership.close()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._consumer is not None:
            try:
                self._consumer.close()
            except Exception as exc:  # leaving failed: the session timeout frees the share
                log.warning("kafka-archive: group %s: leaving failed: %s", self.group, exc)
