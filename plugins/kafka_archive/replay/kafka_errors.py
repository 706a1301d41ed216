"""What a confluent-kafka error means for the open replay transaction.

:func:`raise_kafka` turns a client exception into :class:`~.errors.ReplayFencedError` (fenced by a
newer producer, or failed fatally: stop) or :class:`TxnAbort` (abort the transaction and redo it
from the last committed position); :func:`kafka_exception` digs the ``KafkaException`` out of
what confluent-kafka raised.
"""

from __future__ import annotations

from typing import NoReturn

from confluent_kafka import KafkaError, KafkaException

from kafka_archive.replay.errors import ReplayFencedError

__all__ = ["TxnAbort", "kafka_exception", "raise_kafka"]


class TxnAbort(Exception):
    """Internal: the current transaction must be aborted and redone."""


def raise_kafka(exc: BaseException, partition: int) -> NoReturn:
    """Turn a client exception into :class:`ReplayFencedError` (fenced, fatal) or
    :class:`TxnAbort` (redo the transaction); ``partition`` names the source partition."""
    exc = kafka_exception(exc)
    err = exc.args[0] if exc.args else None
    if isinstance(err, KafkaError):
        if err.fatal() or err.code() in (
            KafkaError._FENCED,
            KafkaError.PRODUCER_FENCED,
            KafkaError.INVALID_PRODUCER_EPOCH,
        ):
            raise ReplayFencedError(
                f"partition {partition}: producer fenced or failed fatally: {err.str()}"
            ) from None
        raise TxnAbort(err.str()) from None
    raise TxnAbort(str(exc)) from None


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
