"""A transactional producer of whole record batches: Kafka's transaction protocol driven with
kafka-python's request classes, for batches the caller has already encoded.

Why not a client library's producer: confluent-kafka (librdkafka) and kafka-python's own
``KafkaProducer`` take records and build batches themselves; neither accepts a batch that is
already built. Batch-level replay sends the archived batches as they are stored (compressed
bytes untouched, only the producer fields re-stamped: ``segment_lib.batch_encode.restamp_v2``),
so it needs a producer of batches. The protocol messages are kafka-python's
(``InitProducerId``, ``AddPartitionsToTxn``, ``Produce``, ``EndTxn``, ``FindCoordinator``,
``Metadata``); the state machine below is the part no library offers, kept to what KIP-98
requires of a transactional producer:

1. :meth:`TxnBatchProducer.init` - ``InitProducerId`` at the transaction coordinator: a new
   epoch for the transactional id, which fences every older producer of that id and makes the
   coordinator abort a transaction it left open (the call is repeated while that abort
   completes: ``CONCURRENT_TRANSACTIONS``). Sequences restart at 0 for the new epoch.
2. :meth:`~TxnBatchProducer.begin` - ``AddPartitionsToTxn`` for every partition the transaction
   will write (the coordinator writes the markers there at the end).
3. :meth:`~TxnBatchProducer.sequence` then :meth:`~TxnBatchProducer.append` - each batch takes
   the next base sequence of its partition (the broker refuses a gap or a repeat) and goes in a
   ``Produce`` request - one batch per partition per request, as a broker requires of magic 2 -
   with up to ``max_in_flight`` requests per broker in flight (one connection per broker
   answers in order, so sequences arrive in order; five is what the broker's duplicate
   detection remembers per producer). The leader's answer gives the batch its offset.
   **Durability is asked of a partition's last batch only**: every batch of a partition but the
   transaction's last goes with ``acks=1`` (answered once the leader appended it), the last -
   held back until the next batch of that partition or :meth:`~TxnBatchProducer.flush` - with
   ``acks=all``. A broker answers ``acks=all`` once the partition's high watermark passed the
   batch, i.e. once every in-sync replica holds the log up to it, *every earlier batch
   included*: so when :meth:`~TxnBatchProducer.flush` returns, the whole transaction is as
   durable as if each batch had asked ``acks=all``. Why: a broker serves one request per
   connection at a time, so with ``acks=all`` on every batch a partition moved one batch per
   replication round trip (docs/performance.md, "Batch-level replay into a real cluster").
   A batch that a failing leader acknowledged but did not replicate cannot be committed: the
   partition's next request finds a gap in this producer's sequences on the new leader
   (``OUT_OF_ORDER_SEQUENCE_NUMBER`` / ``UNKNOWN_PRODUCER_ID``) or the ``acks=all`` request
   fails, and the transaction is aborted and redone (step 4).
4. :meth:`~TxnBatchProducer.commit` / :meth:`~TxnBatchProducer.abort` - every request answered,
   then ``EndTxn``. An abort re-runs step 1 (a new epoch: whatever the failed requests left
   behind is fenced, sequences restart), so a transaction that failed half way is redone whole.

Errors (:class:`TxnError` subclasses): :class:`TxnRetry` - abort and redo the transaction
(leader moved, timeout, not enough replicas, a sequence the broker refused, a connection that
failed); :class:`TxnFenced` - a newer producer of the transactional id exists;
:class:`TxnTooLarge` - the target refuses a batch's size (``max.message.bytes``); :class:`TxnFatal`
- the request cannot succeed (authorization, a record the broker refuses).

Not thread safe: one producer per thread (it owns a :class:`~.client.ProtocolClient`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.kafka_protocol.client import (
    ProtocolClient,
    ProtocolConnectionError,
    error_name,
)

__all__ = [
    "TxnBatchProducer",
    "TxnError",
    "TxnFatal",
    "TxnFenced",
    "TxnRetry",
    "TxnTooLarge",
]

#: a batch's answer: called with the offset the leader gave its first record
OnOffset = Callable[[int], None]

# error codes (Kafka's Errors.java)
_CONCURRENT_TRANSACTIONS: Final = 51
#: how soon a request the coordinator answered CONCURRENT_TRANSACTIONS is sent again (the
#: previous transaction's markers take a few ms; the Java client waits 20 ms)
_CONCURRENT_PAUSE_S: Final = 0.005
_COORDINATOR_MOVED: Final = frozenset({14, 15, 16})
_FENCED: Final = frozenset({47, 90})  # INVALID_PRODUCER_EPOCH, PRODUCER_FENCED
_TOO_LARGE: Final = frozenset({10, 18})  # MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE
#: worth aborting and redoing the transaction: leadership, timeouts, replicas, storage, a
#: sequence or producer state the broker refused (a new epoch starts clean)
_RETRY: Final = frozenset({3, 5, 6, 7, 13, 19, 20, 45, 46, 48, 51, 56, 59, 74, 75, 14, 15, 16, 2})


class TxnError(KafkaArchiveError):
    """A transactional request failed; the subclass says what the caller may do."""


class TxnRetry(TxnError):
    """Abort the transaction and redo it (a transient failure)."""


class TxnFenced(TxnError):
    """A newer producer of the transactional id exists: this one must stop."""


class TxnTooLarge(TxnError):
    """The target refused a batch (or a request) as too large."""


class TxnFatal(TxnError):
    """The request cannot succeed as asked (authorization, invalid records...)."""


def _raise_for(code: int, what: str, why: str = "") -> None:
    """Raise the :class:`TxnError` of a broker's error ``code`` (0: nothing); ``why`` is the
    broker's error message, when it gave one."""
    if not code:
        return
    text = f"{what}: the broker answered {error_name(code)}" + (f": {why}" if why else "")
    if code in _FENCED:
        raise TxnFenced(text)
    if code in _TOO_LARGE:
        raise TxnTooLarge(text)
    if code in _RETRY:
        raise TxnRetry(text)
    raise TxnFatal(text)


@dataclass(slots=True)
class _Request:
    """A Produce request in flight: its one batch (a broker takes one magic 2 batch per
    partition per request, and the replay writes one partition at a time) and its callback."""

    node: int
    topic: str
    partition: int
    batch: bytes | bytearray
    on_offset: OnOffset | None
    future: Any = None
    #: 1: the leader's append answers (a later acks=all request of the partition makes it
    #: durable); -1: every in-sync replica's (see the module docstring, step 3)
    acks: int = -1


class TxnBatchProducer:
    """Produce pre-built record batches in transactions (see the module docstring).

    Args:
        conf: librdkafka client settings of the target (connection, security).
        transactional_id: the transactional id (one producer per id at a time).
        transaction_timeout_ms: how long the coordinator lets a transaction stay open.
        max_in_flight: Produce requests in flight per broker.
    """

    def __init__(
        self,
        conf: Mapping[str, Any],
        transactional_id: str,
        *,
        transaction_timeout_ms: int = 60_000,
        timeout_ms: int = 30_000,
        max_in_flight: int = 5,
    ) -> None:
        self.transactional_id = transactional_id
        self.client = ProtocolClient(
            conf,
            client_id="kafka-archive-replay",
            timeout_ms=timeout_ms,
            max_in_flight=max_in_flight,
        )
        self.transaction_timeout_ms = transaction_timeout_ms
        self.max_in_flight = max_in_flight
        self.producer_id = -1
        self.producer_epoch = -1
        self._coordinator: int | None = None
        self._leaders: dict[str, dict[int, int]] = {}
        self._sequences: dict[tuple[str, int], int] = {}
        self._added: set[tuple[str, int]] = set()
        self._in_flight: deque[_Request] = deque()
        #: per partition, its latest batch, not sent yet: it goes with acks=1 when the next
        #: batch of the partition comes, with acks=all at flush() (module docstring, step 3)
        self._held: dict[tuple[str, int], _Request] = {}

    def close(self) -> None:
        self.client.close()

    # -- set-up -----------------------------------------------------------------------------------

    def partitions(self, topic: str) -> int:
        """``topic``'s partition count on the target (its leaders are remembered).

        Raises:
            TxnFatal: the topic does not exist or may not be described.
        """
        return len(self._leaders_of(topic))

    def _leaders_of(self, topic: str) -> dict[int, int]:
        if topic not in self._leaders:
            try:
                self._leaders[topic] = self.client.leaders(topic)
            except KeyError as exc:
                raise TxnFatal(str(exc.args[0])) from None
        return self._leaders[topic]

    def _leader(self, topic: str, partition: int) -> int:
        leader = self._leaders_of(topic).get(partition, -1)
        if leader < 0:
            self._leaders.pop(topic, None)
            raise TxnRetry(f"{topic}-{partition}: no leader")
        return leader

    def _coordinator_call(
        self,
        build: Callable[[], Any],
        what: str,
        codes: Callable[[Any], list[int]] = lambda resp: [int(resp.error_code)],
    ) -> Any:
        """Send a coordinator request, again while the coordinator moves, loads or completes
        the previous transaction (up to the client's timeout); the response. ``codes`` gives
        a response's error codes (AddPartitionsToTxn answers per partition)."""
        deadline = time.monotonic() + self.client.timeout_ms / 1000
        pause = 0.05
        while True:
            if self._coordinator is None:
                self._coordinator = self.client.coordinator(self.transactional_id)
            try:
                resp = self.client.request(self._coordinator, build(), what)
            except ProtocolConnectionError:
                self._coordinator = None
                if time.monotonic() > deadline:
                    raise
                time.sleep(pause)
                continue
            errors = {c for c in codes(resp) if c}
            if errors & _COORDINATOR_MOVED:
                self._coordinator = None
            transient = errors and errors <= _COORDINATOR_MOVED | {_CONCURRENT_TRANSACTIONS}
            if transient and time.monotonic() < deadline:
                # the previous transaction's markers are still being written (a few ms, asked
                # again soon, as Kafka's clients do), or the coordinator moved
                only_markers = errors == {_CONCURRENT_TRANSACTIONS}
                time.sleep(_CONCURRENT_PAUSE_S if only_markers else pause)
                pause = min(pause * 2, 0.5)
                continue
            return resp

    def init(self) -> None:
        """``InitProducerId``: a new epoch (fencing older producers, aborting what they left
        open), sequences from 0, nothing in flight.

        Raises:
            TxnFenced / TxnFatal / TxnRetry: as the coordinator answers.
        """
        from kafka.protocol.producer.transaction import InitProducerIdRequest

        self._drop_in_flight()
        resp = self._coordinator_call(
            lambda: InitProducerIdRequest(
                transactional_id=self.transactional_id,
                transaction_timeout_ms=self.transaction_timeout_ms,
                producer_id=-1,
                producer_epoch=-1,
                max_version=4,
            ),
            "InitProducerId",
        )
        _raise_for(int(resp.error_code), "InitProducerId")
        self.producer_id, self.producer_epoch = int(resp.producer_id), int(resp.producer_epoch)
        self._sequences.clear()
        self._added.clear()

    # -- one transaction --------------------------------------------------------------------------

    def begin(self, partitions: Sequence[tuple[str, int]]) -> None:
        """Add ``partitions`` to the transaction (``AddPartitionsToTxn``); every partition a
        batch is appended to must be among them."""
        from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest

        todo = sorted(set(partitions) - self._added)
        if not todo:
            return
        by_topic: dict[str, list[int]] = {}
        for topic, partition in todo:
            by_topic.setdefault(topic, []).append(partition)
        topic_cls = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
        resp = self._coordinator_call(
            lambda: AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=self.transactional_id,
                v3_and_below_producer_id=self.producer_id,
                v3_and_below_producer_epoch=self.producer_epoch,
                v3_and_below_topics=[topic_cls(name=t, partitions=p) for t, p in by_topic.items()],
                max_version=3,
            ),
            "AddPartitionsToTxn",
            lambda resp: [
                int(p.partition_error_code)
                for t in resp.results_by_topic_v3_and_below
                for p in t.results_by_partition
            ],
        )
        for t in resp.results_by_topic_v3_and_below:
            for p in t.results_by_partition:
                _raise_for(
                    int(p.partition_error_code), f"AddPartitionsToTxn {t.name}-{p.partition_index}"
                )
        self._added.update(todo)

    def sequence(self, topic: str, partition: int, records: int) -> int:
        """The base sequence of the next batch of ``records`` records to ``topic-partition``
        (taken: the next call gives the one after)."""
        key = (topic, partition)
        seq = self._sequences.get(key, 0)
        self._sequences[key] = (seq + records) & 0x7FFFFFFF
        return seq

    def append(
        self,
        topic: str,
        partition: int,
        batch: bytes | bytearray,
        on_offset: OnOffset | None = None,
    ) -> None:
        """Send one restamped batch (its sequence from :meth:`sequence`) in a Produce request of
        its own, waiting first for the oldest in flight when ``max_in_flight`` are. The
        partition's previous batch goes now (``acks=1``); this one when the next comes or at
        :meth:`flush` (module docstring, step 3). ``on_offset`` is called with its first
        record's offset once the leader answered."""
        key = (topic, partition)
        if key not in self._added:
            raise TxnFatal(f"{topic}-{partition} was not added to the transaction")
        # a broker takes one magic 2 batch per partition per request (LogValidator: "Compressed
        # outer record has more than one batch"), and the replay writes one partition at a time
        previous = self._held.pop(key, None)
        if previous is not None:
            previous.acks = 1
            self._send(previous)
        self._held[key] = _Request(
            self._leader(topic, partition), topic, partition, batch, on_offset
        )

    def flush(self) -> None:
        """Send every partition's held batch with ``acks=all`` and wait for every answer:
        the batches' offsets are then known and every batch appended is durable."""
        held, self._held = self._held, {}
        for req in held.values():
            self._send(req)
        while self._in_flight:
            self._answer(self._in_flight.popleft())

    def commit(self) -> None:
        """:meth:`flush`, then ``EndTxn`` (commit): the transaction's batches become visible
        to read_committed consumers together.

        Raises:
            TxnError: a batch failed (nothing of the transaction is committed), or the commit
                did (:class:`TxnRetry`: its outcome is known - the coordinator refused it).
        """
        self.flush()
        self._end(committed=True)

    def abort(self) -> None:
        """Give the open transaction up: ``EndTxn`` (abort) when that can still be asked, then
        :meth:`init` (a new epoch fences whatever the failed requests left; the coordinator
        aborts the transaction if the first step could not)."""
        self._drop_in_flight()
        # whatever failed may have been a broker going away: leaders and the coordinator are
        # looked up again
        self._leaders.clear()
        try:
            self._end(committed=False)
        except (TxnError, ProtocolConnectionError):
            pass  # init() below aborts it anyway
        self.init()

    def _end(self, *, committed: bool) -> None:
        from kafka.protocol.producer.transaction import EndTxnRequest

        if not self._added:
            return  # nothing was added: there is no transaction to end
        resp = self._coordinator_call(
            lambda: EndTxnRequest(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                committed=committed,
                max_version=3,
            ),
            "EndTxn",
        )
        _raise_for(int(resp.error_code), "EndTxn (commit)" if committed else "EndTxn (abort)")
        self._added.clear()

    # -- Produce ----------------------------------------------------------------------------------

    def _send(self, req: _Request) -> None:
        from kafka.protocol.producer import ProduceRequest

        while sum(1 for r in self._in_flight if r.node == req.node) >= self.max_in_flight:
            self._answer(self._in_flight.popleft())
        topic_cls = ProduceRequest.TopicProduceData
        part = topic_cls.PartitionProduceData(index=req.partition, records=req.batch)
        request = ProduceRequest(
            transactional_id=self.transactional_id,
            acks=req.acks,
            timeout_ms=self.client.timeout_ms,
            topic_data=[topic_cls(name=req.topic, partition_data=[part])],
            min_version=3,
            max_version=11,
        )
        try:
            req.future = self.client.send(req.node, request)
        except ProtocolConnectionError as exc:
            raise TxnRetry(str(exc)) from None
        self._in_flight.append(req)

    def _answer(self, req: _Request) -> None:
        """Wait for ``req``'s response; hand its batch its offset, or raise its error."""
        try:
            resp = self.client.wait(req.future, f"Produce to broker {req.node}")
        except ProtocolConnectionError as exc:
            raise TxnRetry(str(exc)) from None
        what = f"Produce to {req.topic}-{req.partition}"
        answers = [
            p
            for t in resp.responses
            if t.name == req.topic
            for p in t.partition_responses
            if p.index == req.partition
        ]
        if not answers:
            raise TxnRetry(f"{what}: no answer for the partition")
        code = int(answers[0].error_code)
        if code in (6, 74, 75, 3, 5):  # leadership moved: look it up again on the retry
            self._leaders.pop(req.topic, None)
        _raise_for(code, what, getattr(answers[0], "error_message", None) or "")
        if req.on_offset is not None:
            req.on_offset(int(answers[0].base_offset))

    def _drop_in_flight(self) -> None:
        """Forget the requests in flight or held (their transaction is being given up)."""
        self._in_flight.clear()
        self._held.clear()
