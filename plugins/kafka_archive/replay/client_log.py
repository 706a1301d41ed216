"""librdkafka's own log lines and error callbacks, captured instead of streamed.

By default librdkafka prints every log line to stderr itself. Against a dead target a replay's
clients (reconnecting every 10 ms, see :data:`~.progress.CLIENT_DEFAULTS`) printed thousands of
``Connect to ipv4#127.0.0.1:1 failed`` lines before the real error. Every client the replay makes
gets :data:`CLIENT_LOG_SETTINGS` instead: a Python :class:`logging.Logger` that does not propagate
(so nothing reaches the terminal or the Airflow task log) and an ``error_cb``, both feeding one
process-wide :class:`ClientLog`. Errors the replay raises about the target then carry a
*summary* of what librdkafka reported (:meth:`ClientLog.summary`): a count and the distinct
messages, most frequent first.

confluent-kafka delivers these lines and callbacks from ``poll()``/``flush()``; lines still queued
when a client closes are dropped, which is fine: they are only ever summarised.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

__all__ = [
    "CLIENT_LOG",
    "CLIENT_LOG_SETTINGS",
    "ClientLog",
    "new_client",
]

T = TypeVar("T")

#: distinct messages kept (older ones are only counted)
_MAX_DISTINCT = 200

# "FAIL [rdkafka#consumer-1] [thrd:127.0.0.1:1/bootstrap]: 127.0.0.1:1/bootstrap: Connect to..."
# -> "127.0.0.1:1/bootstrap: Connect to ..."; "(after 0ms in state CONNECT)" -> dropped, so that
# the same failure repeated counts as one message
_PREFIX = re.compile(r"^[A-Z_]+ \[rdkafka#[^\]]*\] \[thrd:[^\]]*\]: ")
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


#: the process-wide collector (every replay client shares it)
CLIENT_LOG = ClientLog()

_LOGGER = logging.getLogger("kafka_archive.replay.librdkafka")
_LOGGER.propagate = False  # captured, summarised in errors: never streamed
_LOGGER.setLevel(logging.DEBUG)
_LOGGER.addHandler(CLIENT_LOG)

#: settings every replay client gets (before the target's own settings)
CLIENT_LOG_SETTINGS: dict[str, Any] = {"logger": _LOGGER, "error_cb": CLIENT_LOG.error_cb}


def new_client(factory: Callable[[dict[str, Any]], T], config: dict[str, Any]) -> T:
    """``factory(config)`` (a confluent-kafka Producer/Consumer/AdminClient), with a setting
    librdkafka rejects (unknown name, bad value) reported as a
    :class:`~.errors.ReplayConfigError` naming it, instead of a bare ``KafkaException``.
    Secret values never appear in the message."""
    from kafka_archive.replay.errors import ReplayConfigError
    from kafka_archive.replay.plan import REDACTED, is_secret_setting

    try:
        return factory(config)
    except (KafkaException, ValueError, TypeError) as exc:
        err = exc.args[0] if exc.args else exc
        text = err.str() if isinstance(err, KafkaError) else str(err)
        for name, value in config.items():
            if is_secret_setting(str(name)) and isinstance(value, str) and value:
                text = text.replace(value, REDACTED)
        raise ReplayConfigError(
            f"the target client settings are not valid: {text}",
            hint="Check each --target-config NAME=VALUE (Airflow: target_config or the "
            "connection's extras) against librdkafka's CONFIGURATION.md.",
        ) from None
