"""Raw ``__consumer_offsets`` batches for the offsets follower's tests, made by this project's
segment writer (:mod:`kafka_archive_dev.writer.encode`) and served like a broker's Fetch answer.

:class:`LogRawSource` holds each partition's log as encoded batches (plain, transactional and
COMMIT/ABORT markers) and answers :meth:`~LogRawSource.fetch` as a broker does: whole batches
from the one holding the offset, cut at ``max_bytes`` with the next batch's first bytes left
over (a trailing partial batch, which the parser must drop).

:func:`mirror_raw_source` patches the follower so that its raw-batch reader for a bootstrap
address is such a source: kafka-python (3.0) cannot bootstrap against librdkafka's mock
cluster (it does not decode the mock's ApiVersions fallback answer), so the tests that run the
follower against the mock give the raw reader a mirror of what they produced there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from kafka_archive.offsets_follower import loop
from kafka_archive.offsets_follower.raw_batches import RawBatch, parse_batches
from kafka_archive_dev.writer.encode import (
    EncodedBatch,
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
)

from segment_lib.control import ControlType


@dataclass
class LogRawSource:
    """A :class:`~kafka_archive.offsets_follower.raw_batches.RawBatchSource` over logs built
    in memory; ``fetches`` counts the calls, ``max_bytes`` is the Fetch size limit."""

    max_bytes: int = 4096
    logs: dict[int, list[EncodedBatch]] = field(default_factory=dict)
    fetches: int = 0
    closed: bool = False

    def end(self, partition: int) -> int:
        log = self.logs.get(partition, [])
        return log[-1].last_offset + 1 if log else 0

    def plain(
        self, partition: int, records: Iterable[tuple[int, bytes | None, bytes | None]]
    ) -> int:
        """Append one plain batch of ``(timestamp, key, value)``; returns its base offset."""
        base = self.end(partition)
        recs = [WriteRecord(k, v, (), max(ts, 0)) for ts, k, v in records]
        self.logs.setdefault(partition, []).append(encode_batch_v2(base, recs))
        return base

    def txn(
        self, partition: int, pid: int, records: Iterable[tuple[int, bytes | None, bytes | None]]
    ) -> int:
        """Append one transactional batch of producer ``pid``; returns its base offset."""
        base = self.end(partition)
        recs = [WriteRecord(k, v, (), max(ts, 0)) for ts, k, v in records]
        self.logs.setdefault(partition, []).append(
            encode_batch_v2(base, recs, producer_id=pid, producer_epoch=0, transactional=True)
        )
        return base

    def marker(self, partition: int, pid: int, *, commit: bool, timestamp: int) -> int:
        """Append ``pid``'s COMMIT (or ABORT) marker; returns its offset."""
        off = self.end(partition)
        kind = ControlType.COMMIT if commit else ControlType.ABORT
        self.logs.setdefault(partition, []).append(
            encode_control_batch(off, kind, producer_id=pid, producer_epoch=0, timestamp=timestamp)
        )
        return off

    def fetch(self, partition: int, offset: int) -> list[RawBatch]:
        self.fetches += 1
        out = b""
        for b in self.logs.get(partition, []):
            if b.last_offset < offset:
                continue
            if out and len(out) + len(b.data) > self.max_bytes:
                out += b.data[: len(b.data) // 2]  # a partial batch, as a cut Fetch ends
                break
            out += b.data
        return parse_batches(out)

    def close(self) -> None:
        self.closed = True


#: bootstrap address -> the mirror of what the test produced to that mock cluster
_MIRRORS: dict[str, LogRawSource] = {}


def mirror_raw_source(monkeypatch: pytest.MonkeyPatch, bootstrap: str) -> LogRawSource:
    """A :class:`LogRawSource` that the follower uses as its raw reader for ``bootstrap``
    (the follower's ``KafkaRawBatchReader`` patched for the test). A new, empty one each
    time: a mock cluster's address can be one an earlier test's cluster had (ports are reused),
    and that cluster's mirror must not be taken for this one's."""
    source = _MIRRORS[bootstrap] = LogRawSource()

    def reader(conf: Mapping[str, Any]) -> LogRawSource:
        return _MIRRORS[str(conf["bootstrap.servers"])]

    monkeypatch.setattr(loop, "KafkaRawBatchReader", reader)
    return source
