"""The transactional producer's ending calls, each by its contract (see :mod:`.kafka_errors`).

``init_transactions``, ``commit_transaction`` and ``abort_transaction`` may each be called
again after a *retriable* error (same transaction, same producer); what they do with any other
error differs, and is what this module decides:

* :func:`init_transactions` - a typed :class:`~.errors.ReplayTargetError` (nothing is open);
* :func:`commit_transaction` - an abortable error is :class:`~.kafka_errors.TxnAbort` (nothing
  was committed), fenced is :class:`~.errors.ReplayFencedError`, anything else (fatal, or
  retries run out) leaves the outcome *unknown* - the coordinator may still complete the commit
  - so redoing the transaction from memory could write it twice: the producer is replaced and
  the replay resumes from the progress committed in the target
  (:class:`~.kafka_errors.ProducerFailed`);
* :func:`abort_transaction` - flushes first (librdkafka#4849, below); one attempt: fenced is
  :class:`~.errors.ReplayFencedError`, anything else, a timeout included,
  :class:`~.kafka_errors.ProducerFailed` (always safe: the new producer's
  ``init_transactions`` aborts what the old one left open; retrying instead could wait
  :data:`MAX_CALL_RETRIES` x 60 s on a producer stuck bumping its epoch, as CI saw on
  librdkafka's mock cluster).

Waits between attempts go through :func:`backoff` (tests make it instant).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from typing import NoReturn

from confluent_kafka import KafkaError, KafkaException, Producer

from kafka_archive.replay.errors import ReplayTargetError
from kafka_archive.replay.execution.kafka_errors import (
    ProducerFailed,
    is_fenced,
    kafka_error,
    raise_kafka,
)

__all__ = [
    "MAX_CALL_RETRIES",
    "RERUN",
    "abort_transaction",
    "backoff",
    "commit_transaction",
    "init_transactions",
]

#: how often one call is made in all when it keeps failing with retriable errors
MAX_CALL_RETRIES = 5

#: the end of every "gave up" message of the replay
RERUN = "re-run the same command to resume: it continues after the last committed transaction"

#: the timeout of each call, seconds (librdkafka's own retries run inside it)
_CALL_TIMEOUT_S = 60


def backoff(seconds: float) -> None:
    """Wait before another attempt (one place, so tests can make waits instant)."""
    time.sleep(seconds)


def _repeat(
    call: Callable[[], object],
    settle: Callable[[KafkaError | None, BaseException], NoReturn],
    *,
    attempts: int = MAX_CALL_RETRIES,
) -> None:
    """``call()``; after a retriable error (not one requiring an abort) again, at most
    ``attempts`` times in all; any other error, or the last, goes to ``settle``, which
    raises."""
    for attempt in range(attempts):
        try:
            call()
            return
        except (KafkaException, SystemError) as exc:
            err = kafka_error(exc)
            if (
                err is not None
                and err.retriable()
                and not err.txn_requires_abort()
                and attempt < attempts - 1
            ):
                backoff(0.5 * (attempt + 1))
                continue
            settle(err, exc)


def _text(err: KafkaError | None, exc: BaseException) -> str:
    return err.str() if err is not None else str(exc)


def init_transactions(producer: Producer, transactional_id: str) -> None:
    """``init_transactions`` (fences older producers of ``transactional_id`` and ends what they
    left open).

    Raises:
        ReplayTargetError: it kept failing.
    """

    def settle(err: KafkaError | None, exc: BaseException) -> NoReturn:
        raise ReplayTargetError(
            f"init_transactions for {transactional_id} failed: {_text(err, exc)}; {RERUN}"
        ) from None

    _repeat(lambda: producer.init_transactions(_CALL_TIMEOUT_S), settle)


def commit_transaction(producer: Producer, partition: int) -> None:
    """Commit the open transaction of source ``partition``'s producer (module docstring).

    Raises:
        TxnAbort: abort and redo the transaction.
        ReplayFencedError: a newer producer owns the transactional id.
        ProducerFailed: replace the producer and resume from the committed progress.
    """

    def settle(err: KafkaError | None, exc: BaseException) -> NoReturn:
        if err is not None and (err.txn_requires_abort() or is_fenced(err)):
            raise_kafka(exc, partition)
        raise ProducerFailed(
            f"partition {partition}: committing a transaction failed: {_text(err, exc)}"
        ) from None

    _repeat(lambda: producer.commit_transaction(_CALL_TIMEOUT_S), settle)


def abort_transaction(producer: Producer, partition: int) -> None:
    """Abort the open transaction of source ``partition``'s producer (the caller redoes it).

    A flush comes first: an abort whose ``EndTxn`` reaches the coordinator before it has
    processed the transaction's first ``AddPartitionsToTxn`` finds the transaction ``Empty``
    and fails *fatally* with ``INVALID_TXN_STATE`` (librdkafka#4849: the client counts the
    request as sent, not as answered); a record acknowledged proves its partition registered.
    The flushed records are aborted with the rest.

    Raises:
        ReplayFencedError: a newer producer owns the transactional id.
        ProducerFailed: replace the producer and resume from the committed progress.
    """
    with suppress(KafkaException, SystemError):  # failures are the abort's to report
        producer.flush(30)

    def settle(err: KafkaError | None, exc: BaseException) -> NoReturn:
        if err is not None and is_fenced(err):
            raise_kafka(exc, partition)
        raise ProducerFailed(
            f"partition {partition}: aborting a transaction failed: {_text(err, exc)}"
        ) from None

    _repeat(lambda: producer.abort_transaction(_CALL_TIMEOUT_S), settle, attempts=1)
