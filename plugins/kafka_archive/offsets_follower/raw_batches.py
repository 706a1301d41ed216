"""The raw batches of a ``__consumer_offsets`` partition: what a ``read_committed`` librdkafka
consumer does not show (producer ids, the transactional flag, COMMIT/ABORT markers).

The offsets follower reads its records through librdkafka (``read_committed``), which hides
control records and producer ids: it cannot tell a transactional offset commit
(``TxnOffsetCommit``, e.g. ``send_offsets_to_transaction``) from a plain one, nor when its
transaction committed. :class:`KafkaRawBatchReader` sends Fetch requests itself
(``isolation_level`` 0, read_uncommitted: every batch, markers included) through kafka-python's
protocol layer (connections, metadata, SSL and SASL) and parses the returned bytes with this
project's own batch parser (:mod:`segment_lib.log_file`): :func:`parse_batches` gives, per
batch, its offsets, producer id, transactional and control flags and, for a COMMIT/ABORT
marker, the marker's type, offset and timestamp (the control record's, as the archive reads it).

Contract of a :class:`RawBatchSource`: :meth:`~RawBatchSource.fetch` returns whole batches in
offset order, the first one holding ``offset`` or starting after it (a fetch may also return
batches before it, and never a trailing partial batch: that one is fetched again next time);
empty when there is nothing at or after ``offset`` yet.

Settings: :func:`kafka_python_config` maps the follower's librdkafka settings to kafka-python's
arguments; a setting it cannot map is a :class:`UnsupportedRawSetting` naming the setting
(never its value).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from kafka_archive.errors import InternalSignal, KafkaArchiveError
from kafka_archive.kafka_protocol.client import (
    MAX_RESPONSE_BYTES,
    error_name,
    fail_fast_on_authentication,
)
from kafka_archive.kafka_protocol.config import UnsupportedRawSetting, kafka_python_config
from kafka_archive.kafka_protocol.fetch import LEADERSHIP_ERRORS, OFFSET_OUT_OF_RANGE
from segment_lib.control import ControlType, decode_control_record
from segment_lib.errors import CorruptRecordError, TornTailError
from segment_lib.log_file import decode_batch, iter_batches

__all__ = [
    "KafkaRawBatchReader",
    "RawBatch",
    "RawBatchSource",
    "RawFetchError",
    "UnsupportedRawSetting",
    "kafka_python_config",
    "parse_batches",
]

log = logging.getLogger(__name__)

TOPIC: Final = "__consumer_offsets"


@dataclass(frozen=True, slots=True)
class RawBatch:
    """One batch's header facts. ``marker`` is ``"commit"`` or ``"abort"`` for a transaction
    marker (then ``marker_offset``/``marker_ts`` are its control record's offset and
    timestamp), ``""`` otherwise."""

    base_offset: int
    last_offset: int
    producer_id: int
    transactional: bool
    control: bool
    marker: str = ""
    marker_offset: int = -1
    marker_ts: int = -1


class RawBatchSource(Protocol):
    """Where raw batches come from (see the module docstring for :meth:`fetch`)."""

    def fetch(self, partition: int, offset: int) -> list[RawBatch]: ...

    def close(self) -> None: ...


class RawFetchError(KafkaArchiveError, RuntimeError):
    """A Fetch for raw batches failed (the broker's error code or the connection's error)."""


def parse_batches(buf: bytes | memoryview) -> list[RawBatch]:
    """The whole batches of ``buf`` (a Fetch response's record bytes), in order; a trailing
    partial batch (a Fetch cut at its size limit) is left out.

    Raises:
        SegmentError: a malformed batch or a checksum mismatch (as ``iter_batches``).
    """
    view = memoryview(buf)
    out: list[RawBatch] = []
    try:
        for h in iter_batches(view, verify_crc=True):
            marker, m_off, m_ts = "", -1, -1
            if h.is_control:
                for rec in decode_batch(view, h):
                    try:
                        ctl = decode_control_record(rec.key, rec.value)
                    except CorruptRecordError:
                        break
                    if ctl.type in (ControlType.COMMIT, ControlType.ABORT):
                        marker = "commit" if ctl.type is ControlType.COMMIT else "abort"
                        m_off, m_ts = rec.offset, rec.timestamp
                    break
            out.append(
                RawBatch(
                    h.base_offset,
                    h.last_offset,
                    h.producer_id,
                    h.is_transactional,
                    h.is_control,
                    marker,
                    m_off,
                    m_ts,
                )
            )
    except TornTailError:
        pass  # cut by the Fetch's size limit: fetched again from there next time
    return out


class KafkaRawBatchReader:
    """A :class:`RawBatchSource` over a live cluster: Fetch (read_uncommitted) of
    ``__consumer_offsets`` partitions through kafka-python's client, to each partition's
    leader (looked up by a Metadata request, again after a leadership error).

    Raises (from :meth:`fetch`): :class:`RawFetchError` when the broker answers an error or
    the request fails (leadership errors and connection failures are retried a few times
    after a new leader lookup first; an offset no longer in the log is an empty answer);
    construction raises :class:`UnsupportedRawSetting` for a setting it cannot map.
    """

    #: bytes asked per Fetch (the broker returns at least one whole batch anyway)
    FETCH_BYTES: Final = 1 << 20

    def __init__(self, conf: Mapping[str, Any], *, timeout_ms: int = 30_000) -> None:
        from kafka.net.compat import KafkaNetClient

        self._args = kafka_python_config(conf)
        self._args.setdefault("client_id", "kafka-archive-offsets-follower-raw")
        # (a Fetch answer of FETCH_BYTES plus headers is over kafka-python's default frame limit)
        self._args["receive_message_max_bytes"] = MAX_RESPONSE_BYTES
        self._timeout_ms = timeout_ms
        self._client: Any = KafkaNetClient(**self._args)
        fail_fast_on_authentication(self._client)
        self._leaders: dict[int, int] = {}

    def close(self) -> None:
        self._client.close()

    def _leader(self, partition: int) -> int:
        if partition not in self._leaders:
            from kafka.protocol.metadata import MetadataRequest

            self._client.check_version(timeout_ms=self._timeout_ms)  # bootstrap once
            node = self._client.least_loaded_node(bootstrap_fallback=True)
            md = self._client.send_and_receive(
                node,
                MetadataRequest(
                    topics=[MetadataRequest.MetadataRequestTopic(name=TOPIC)], max_version=8
                ),
                timeout_ms=self._timeout_ms,
            )
            for t in md.topics:
                if t.name == TOPIC:
                    if t.error_code:  # e.g. TOPIC_AUTHORIZATION_FAILED: no Describe/Read ACL
                        raise RawFetchError(f"{TOPIC}: {error_name(t.error_code)}")
                    for p in t.partitions:
                        self._leaders[p.partition_index] = p.leader_id
        if partition not in self._leaders or self._leaders[partition] < 0:
            self._leaders.pop(partition, None)
            raise RawFetchError(f"{TOPIC}-{partition}: no leader known")
        return self._leaders[partition]

    def fetch(self, partition: int, offset: int) -> list[RawBatch]:
        from kafka_archive.kafka_protocol.fetch import fetch_request

        request = fetch_request(
            {(TOPIC, partition): offset},
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=self.FETCH_BYTES,
            partition_max_bytes=self.FETCH_BYTES,
        )
        for attempt in range(_ATTEMPTS):
            try:
                return self._fetch_once(request, partition, offset)
            except _Retriable as exc:
                self._leaders.pop(partition, None)  # looked up again
                if attempt == _ATTEMPTS - 1:
                    raise RawFetchError(str(exc)) from None
                time.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")  # pragma: no cover

    def _fetch_once(self, request: Any, partition: int, offset: int) -> list[RawBatch]:
        try:
            leader = self._leader(partition)
            resp = self._client.send_and_receive(leader, request, timeout_ms=self._timeout_ms)
        except RawFetchError as exc:
            raise _Retriable(str(exc)) from None
        except Exception as exc:  # kafka-python's connection and timeout errors
            raise _Retriable(f"{TOPIC}-{partition}: Fetch failed: {exc}") from None
        for t in resp.responses:
            for p in t.partitions:
                if p.partition_index != partition:
                    continue
                if p.error_code == _OFFSET_OUT_OF_RANGE:
                    return []  # deleted (retention) since the consumer read it: nothing to date
                if p.error_code in _LEADERSHIP_ERRORS:
                    raise _Retriable(
                        f"{TOPIC}-{partition}: Fetch answered error code {p.error_code}"
                    )
                if p.error_code:
                    raise RawFetchError(
                        f"{TOPIC}-{partition}: Fetch from offset {offset} answered error code "
                        f"{p.error_code}"
                    )
                return parse_batches(bytes(p.records or b""))
        return []


class _Retriable(InternalSignal):
    """A Fetch failure worth a retry after a new leader lookup."""


_ATTEMPTS: Final = 5
_OFFSET_OUT_OF_RANGE: Final = OFFSET_OUT_OF_RANGE
_LEADERSHIP_ERRORS: Final = LEADERSHIP_ERRORS
