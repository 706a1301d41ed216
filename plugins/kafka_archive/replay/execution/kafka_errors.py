"""What a confluent-kafka error means for the open replay transaction.

librdkafka's transactional API sorts every error into one of four kinds, and each has one
right answer (the contract of ``commit_transaction``/``abort_transaction`` in confluent-kafka):

* **retriable** (``KafkaError.retriable()``, e.g. a commit that timed out while the coordinator
  moved): call the *same* method again - the transaction is still the same one;
* **abortable** (``txn_requires_abort()``, or any other non-fatal error: a delivery failure, a
  broker-side abort): abort the transaction and redo it from the last committed position
  (:class:`TxnAbort`);
* **fenced** (``PRODUCER_FENCED``, ``_FENCED``, ``INVALID_PRODUCER_EPOCH``): a newer producer
  took the transactional id - the run stops, or takes the id back when it still owns the replay
  (:class:`~.errors.ReplayFencedError`);
* **fatal** otherwise (``fatal()``: e.g. ``INVALID_TXN_STATE`` when an ``EndTxn`` reached the
  coordinator in a state it refuses, librdkafka#4849): this producer can do nothing more; a new
  one (``init_transactions`` bumps the epoch and ends whatever the old one left open) resumes
  from the progress committed in the target (:class:`ProducerFailed`).

:func:`raise_kafka` raises the class of an exception; :func:`kafka_error` and
:func:`kafka_exception` dig the ``KafkaError`` / ``KafkaException`` out of what confluent-kafka
raised.
"""

from __future__ import annotations

from typing import NoReturn

from confluent_kafka import KafkaError, KafkaException

from kafka_archive.errors import InternalSignal
from kafka_archive.replay.errors import ReplayFencedError

__all__ = [
    "FENCED_CODES",
    "ProducerFailed",
    "TxnAbort",
    "is_fenced",
    "kafka_error",
    "kafka_exception",
    "raise_kafka",
]

#: the codes that mean "a newer producer owns this transactional id"
FENCED_CODES = frozenset(
    (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH)
)


class TxnAbort(InternalSignal):
    """Internal: the current transaction must be aborted and redone."""


class ProducerFailed(InternalSignal):
    """Internal: the producer failed fatally (not fenced) or a commit's outcome is unknown; a
    new producer must resume from the progress committed in the target."""


def is_fenced(err: KafkaError) -> bool:
    """Whether ``err`` says a newer producer took this transactional id."""
    return err.code() in FENCED_CODES


def raise_kafka(exc: BaseException, partition: int) -> NoReturn:
    """Raise the class of the client exception ``exc`` (module docstring): fenced ->
    :class:`ReplayFencedError`, fatal -> :class:`ProducerFailed`, anything else ->
    :class:`TxnAbort`; ``partition`` names the source partition."""
    err = kafka_error(exc)
    if err is None:
        raise TxnAbort(str(kafka_exception(exc))) from None
    if is_fenced(err):
        raise ReplayFencedError(
            f"partition {partition}: producer fenced (by a newer run of this replay, or the "
            f"coordinator ended a transaction older than transaction.timeout.ms): {err.str()}"
        ) from None
    if err.fatal():
        raise ProducerFailed(
            f"partition {partition}: producer failed fatally: {err.str()}"
        ) from None
    raise TxnAbort(err.str()) from None


def kafka_error(exc: BaseException) -> KafkaError | None:
    """The :class:`KafkaError` carried by ``exc`` (see :func:`kafka_exception`), or ``None``."""
    found = kafka_exception(exc)
    err = found.args[0] if found.args else None
    return err if isinstance(err, KafkaError) else None


def kafka_exception(exc: BaseException) -> BaseException:
    """The :class:`KafkaException` behind ``exc``. confluent-kafka reports an error raised
    while it serves delivery callbacks (a producer fenced during ``flush()``) as a
    ``SystemError`` "returned a result with an exception set", caused by the KafkaException:
    seen when a second run of a replay fenced the first on a real broker."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KafkaException):
            return seen
        seen = seen.__cause__ or seen.__context__
    if isinstance(exc, SystemError):
        raise exc
    return exc
