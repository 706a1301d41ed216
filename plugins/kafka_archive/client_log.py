"""librdkafka's own log lines and error callbacks, captured instead of streamed.

By default librdkafka prints every log line to stderr itself. Against a dead cluster a client
(a replay's reconnect every 10 ms, see
:data:`kafka_archive.replay.execution.progress.CLIENT_DEFAULTS`) printed thousands of ``Connect to
ipv4#127.0.0.1:1 failed`` lines before the real error. Every client the platform makes (replay,
offsets follower) gets :data:`CLIENT_LOG_SETTINGS` instead: a Python :class:`logging.Logger` that
does not propagate (so nothing reaches the terminal or the Airflow task log) and an ``error_cb``,
both feeding one process-wide :class:`ClientLog`. Errors raised about a cluster then carry a
*summary* of what librdkafka reported (:meth:`ClientLog.summary`): a count and the distinct
messages, most frequent first.
:func:`reach_metadata` asks a cluster's metadata and gives up quickly, with that summary, when
librdkafka reports every broker down.

confluent-kafka delivers these lines and callbacks from ``poll()``/``flush()``; lines still queued
when a client closes are dropped, which is fine: they are only ever summarised.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from typing import Any

from confluent_kafka import KafkaError, KafkaException

from kafka_archive.errors import KafkaArchiveError

__all__ = [
    "ALL_DOWN_GRACE_S",
    "CLIENT_LOG",
    "CLIENT_LOG_SETTINGS",
    "REACH_TIMEOUT_S",
    "ClientLog",
    "ClusterUnreachable",
    "reach_metadata",
]

#: distinct messages kept (older ones are only counted)
_MAX_DISTINCT = 200

# "FAIL [rdkafka#consumer-1] [thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to..."
# -> "127.0.0.1:1/bootstrap: Connect to ..."; "(after 0ms in state CONNECT)" -> dropped, so that
# the same failure repeated counts as one message
_PREFIX = re.compile(r"^[A-Z_]+ \[[^\]#]*#[^\]]*\] \[thrd:[^\]]*\]: ")
_AFTER = re.compile(r" \(after \d+ms in state [A-Z_]+\)")
_REPEATED = re.compile(r" \(\d+ identical error\(s\) suppressed\)")


def _normalise(text: str) -> str:
    return _REPEATED.sub("", _AFTER.sub("", _PREFIX.sub("", text))).strip()


class ClientLog(logging.Handler):
    """Collects librdkafka log records and error callbacks of every replay client.

    Thread-safe. :meth:`mark` returns a position; :meth:`summary` and :meth:`all_brokers_down`
    look only at what came after it, so one failing step reports its own messages.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self._lock_ = threading.Lock()
        self._seq = 0
        #: (sequence number, normalised message, is an error callback, error code)
        self._events: list[tuple[int, str, bool, int | None]] = []

    # -- feeding ------------------------------------------------------------------------------

    def emit(self, record: logging.LogRecord) -> None:
        self._add(_normalise(record.getMessage()), False, None)

    def error_cb(self, err: KafkaError) -> None:
        """The ``error_cb`` of every replay client."""
        self._add(_normalise(err.str()), True, err.code())

    def _add(self, message: str, is_error: bool, code: int | None) -> None:
        with self._lock_:
            self._seq += 1
            self._events.append((self._seq, message, is_error, code))
            if len(self._events) > 10 * _MAX_DISTINCT:
                # keep the newest half: enough for any summary, bounded memory
                del self._events[: len(self._events) // 2]

    # -- reading ------------------------------------------------------------------------------

    def mark(self) -> int:
        """A position: later calls with ``since=`` this value see only newer messages."""
        with self._lock_:
            return self._seq

    def _since(self, since: int) -> list[tuple[int, str, bool, int | None]]:
        with self._lock_:
            return [e for e in self._events if e[0] > since]

    def all_brokers_down(self, since: int = 0) -> bool:
        """Whether librdkafka reported every broker down (``_ALL_BROKERS_DOWN``) since ``since``."""
        return any(code == KafkaError._ALL_BROKERS_DOWN for *_x, code in self._since(since))

    def summary(self, since: int = 0, *, limit: int = 3) -> str:
        """``""`` when nothing was reported, else e.g. ``librdkafka reported 80 messages:
        127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused (x78);
        1/1 brokers are down (x2)``."""
        events = self._since(since)
        if not events:
            return ""
        counts = Counter(msg for _s, msg, _e, _c in events)
        top = "; ".join(f"{msg} (x{n})" if n > 1 else msg for msg, n in counts.most_common(limit))
        more = len(counts) - limit
        tail = f"; and {more} other message(s)" if more > 0 else ""
        return f"librdkafka reported {len(events)} message(s): {top}{tail}"


#: the process-wide collector (every client shares it)
CLIENT_LOG = ClientLog()

_LOGGER = logging.getLogger("kafka_archive.librdkafka")
_LOGGER.propagate = False  # captured, summarised in errors: never streamed
_LOGGER.setLevel(logging.DEBUG)
_LOGGER.addHandler(CLIENT_LOG)

#: settings every client gets (before the cluster's own settings)
CLIENT_LOG_SETTINGS: dict[str, Any] = {"logger": _LOGGER, "error_cb": CLIENT_LOG.error_cb}

#: how long :func:`reach_metadata` waits for metadata at most, and how long once librdkafka
#: reports every broker down (a refused connection is reported within milliseconds; the grace
#: lets a broker that is just starting answer)
REACH_TIMEOUT_S = 30.0
ALL_DOWN_GRACE_S = 3.0


class ClusterUnreachable(KafkaArchiveError):
    """A cluster did not answer a metadata request; the message says what librdkafka said."""


def reach_metadata(
    consumer: Any,
    topic: str | None,
    *,
    timeout_s: float = REACH_TIMEOUT_S,
    what: str = "the cluster",
) -> Any:
    """``consumer.list_topics(topic)`` asked in short tries for up to ``timeout_s``, giving up
    after :data:`ALL_DOWN_GRACE_S` once librdkafka reports every broker down (a dead or mistyped
    address: one clear error, quickly). ``consumer`` must have :data:`CLIENT_LOG_SETTINGS`;
    ``what`` names the cluster in the error.

    Raises:
        ClusterUnreachable: no answer; its message ends with a summary of what librdkafka said.
    """
    mark = CLIENT_LOG.mark()
    started = time.monotonic()
    last = ""
    while True:
        try:
            return consumer.list_topics(topic, timeout=1.0)
        except KafkaException as exc:
            err = exc.args[0]
            last = err.str() if isinstance(err, KafkaError) else str(err)
        consumer.poll(0)  # serves the error callbacks (and log lines) queued so far
        waited = time.monotonic() - started
        all_down = CLIENT_LOG.all_brokers_down(mark)
        if waited >= timeout_s or (all_down and waited >= ALL_DOWN_GRACE_S):
            said = CLIENT_LOG.summary(mark)
            raise ClusterUnreachable(
                f"cannot reach {what} after {waited:.0f} s: {last}" + (f" ({said})" if said else "")
            )
