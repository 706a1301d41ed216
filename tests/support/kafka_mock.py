"""librdkafka's mock cluster, driven through its C API, plus a read_committed view built from
the raw log - for replay tests.

:class:`MockCluster` creates the mock cluster inside the librdkafka that ships with
confluent-kafka (loaded with :mod:`ctypes`; the Python package exposes no mock API), so a test
can create topics with a chosen partition count (the mock's CreateTopics is not implemented)
and take brokers down and up. The cluster lives as long as the object, in this process; other
processes (a replay subprocess the test kills) reach it through :attr:`bootstrap_servers`.

What the mock (librdkafka 2.16) does **not** do, checked in its source
(``rdkafka_mock_handlers.c``) and by ``test_mock_cluster_limits`` in tests/test_replay_mock.py:

* its Fetch response always carries ``LastStableOffset = high watermark`` and an empty
  ``AbortedTransactions`` list, so a ``read_committed`` consumer also receives records of
  aborted and still-open transactions (the markers are written, consumers skip them);
* a new producer with the same ``transactional.id`` gets a fresh producer id: zombies are not
  fenced and their open transactions are never aborted.

So a test cannot take a confluent-kafka ``read_committed`` consumer's word for what is
committed. :func:`committed_records` reads the partition's raw batches with a minimal Fetch v4
client and applies the broker's rule itself: non-transactional records are visible;
a transactional batch's records are visible iff the next control marker of the same producer
id is a COMMIT. Records of a transaction that never got a marker (a killed producer, whose
transaction a real broker would abort when the restarted producer re-initialises its id) are
not visible. That is what a read_committed consumer of a real cluster ends up seeing.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Iterator

from kafka_archive_dev.embedded_kafka import ConsumedRecord, EmbeddedKafka

from segment_lib.control import ControlType, decode_control_record
from segment_lib.errors import TornTailError
from segment_lib.log_file import decode_batch, iter_batches

# The cluster itself is the platform's embedded target (also used by the demo).
MockCluster = EmbeddedKafka


# -- a minimal Kafka protocol client: Metadata v1 and Fetch v4, enough to read raw batches -----


def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class _Conn:
    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=10)
        self.corr = 0

    def request(self, api_key: int, version: int, body: bytes) -> bytes:
        self.corr += 1
        header = struct.pack(">hhi", api_key, version, self.corr) + _str("replay-tests")
        msg = header + body
        self.sock.sendall(struct.pack(">i", len(msg)) + msg)
        size = struct.unpack(">i", self._recv(4))[0]
        data = self._recv(size)
        corr = struct.unpack_from(">i", data)[0]
        assert corr == self.corr, (corr, self.corr)
        return data[4:]

    def _recv(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.d = data
        self.p = 0

    def take(self, fmt: str) -> int:
        (v,) = struct.unpack_from(">" + fmt, self.d, self.p)
        self.p += struct.calcsize(">" + fmt)
        return int(v)

    def string(self) -> str | None:
        n = self.take("h")
        if n < 0:
            return None
        s = self.d[self.p : self.p + n].decode()
        self.p += n
        return s

    def bytes_(self) -> bytes | None:
        n = self.take("i")
        if n < 0:
            return None
        b = self.d[self.p : self.p + n]
        self.p += n
        return b


def _leader(bootstrap: str, topic: str, partition: int) -> tuple[str, int]:
    host, port = bootstrap.split(",")[0].rsplit(":", 1)
    conn = _Conn(host, int(port))
    try:
        body = struct.pack(">i", 1) + _str(topic)  # Metadata v1: topics [string]
        r = _Reader(conn.request(3, 1, body))
        brokers = {}
        for _ in range(r.take("i")):
            node = r.take("i")
            h = r.string()
            p = r.take("i")
            r.string()  # rack
            brokers[node] = (h or "", p)
        r.take("i")  # controller id
        for _ in range(r.take("i")):
            r.take("h")
            name = r.string()
            r.take("b")  # is_internal
            for _ in range(r.take("i")):
                r.take("h")
                part = r.take("i")
                leader = r.take("i")
                for _ in range(r.take("i")):
                    r.take("i")
                for _ in range(r.take("i")):
                    r.take("i")
                if name == topic and part == partition:
                    return brokers[leader]
    finally:
        conn.close()
    raise LookupError(f"no leader for {topic}-{partition}")


def raw_log(bootstrap: str, topic: str, partition: int, *, max_bytes: int = 4 << 20) -> bytes:
    """Every batch of ``topic-partition`` from offset 0 to the high watermark, as stored
    (retried for up to ~5 s: a mock broker that was just brought back up may drop a connection,
    and while brokers are down the metadata may name a leader it does not list - LookupError)."""
    for attempt in range(10):
        try:
            return _raw_log(bootstrap, topic, partition, max_bytes=max_bytes)
        except (ConnectionError, OSError, LookupError):
            if attempt == 9:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def _raw_log(bootstrap: str, topic: str, partition: int, *, max_bytes: int) -> bytes:
    host, port = _leader(bootstrap, topic, partition)
    conn = _Conn(host, port)
    out = bytearray()
    offset = 0
    try:
        while True:
            body = (
                struct.pack(
                    ">iiiib", -1, 100, 1, max_bytes, 0
                )  # replica, wait, min, max, READ_UNCOMMITTED
                + struct.pack(">i", 1)
                + _str(topic)
                + struct.pack(">i", 1)
                + struct.pack(">iqi", partition, offset, max_bytes)
            )
            r = _Reader(conn.request(1, 4, body))
            r.take("i")  # throttle
            r.take("i")  # topics
            r.string()
            r.take("i")  # partitions
            r.take("i")
            err = r.take("h")
            if err:
                raise RuntimeError(f"fetch error {err}")
            hwm = r.take("q")
            r.take("q")  # last stable offset
            n_aborted = r.take("i")
            for _ in range(max(n_aborted, 0)):
                r.take("q")
                r.take("q")
            records = r.bytes_() or b""
            whole = bytearray()
            try:
                # the mock writes its control batches with a zero CRC: no CRC check here
                for h in iter_batches(records, verify_crc=False):
                    whole += records[h.position : h.next_position]
                    offset = h.next_offset
            except TornTailError:
                pass
            out += whole
            if offset >= hwm or not whole:
                if offset >= hwm:
                    return bytes(out)
                raise RuntimeError(f"no progress fetching {topic}-{partition} at {offset}")
    finally:
        conn.close()


def committed_records(bootstrap: str, topic: str, partition: int) -> list[ConsumedRecord]:
    """The records a read_committed consumer of a real broker sees (see the module docstring)."""
    data = raw_log(bootstrap, topic, partition)
    batches = list(iter_batches(data, verify_crc=False))
    verdict: dict[int, bool] = {}  # batch position -> visible
    pending: dict[int, list[int]] = {}
    for h in batches:
        if h.is_control:
            rec = decode_batch(data, h)[0]
            ctl = decode_control_record(rec.key, rec.value)
            for pos in pending.pop(h.producer_id, []):
                verdict[pos] = ctl.type is ControlType.COMMIT
        elif h.is_transactional:
            pending.setdefault(h.producer_id, []).append(h.position)
        else:
            verdict[h.position] = True
    out = []
    for h in batches:
        if h.is_control or not verdict.get(h.position, False):
            continue
        for r in decode_batch(data, h):
            out.append(
                ConsumedRecord(
                    partition,
                    r.offset,
                    r.timestamp,
                    r.key,
                    r.value,
                    tuple((x.key, x.value) for x in r.headers),
                )
            )
    return out


def open_transaction_records(bootstrap: str, topic: str, partition: int) -> int:
    """Records of transactional batches that no marker of their producer ever resolved."""
    data = raw_log(bootstrap, topic, partition)
    pending: dict[int, int] = {}
    for h in iter_batches(data, verify_crc=False):
        if h.is_control:
            pending.pop(h.producer_id, None)
        elif h.is_transactional:
            pending[h.producer_id] = pending.get(h.producer_id, 0) + h.record_count
    return sum(pending.values())


def iter_committed(bootstrap: str, topic: str, partitions: list[int]) -> Iterator[ConsumedRecord]:
    for p in partitions:
        yield from committed_records(bootstrap, topic, p)


class MarkerAwareReader:
    """A :class:`kafka_archive.replay.execution.progress.CommittedLogReader` that applies the
    broker's read_committed rule itself (see the module docstring): what the replay engine must use
    against the mock, whose read_committed consumers also see aborted and open transactions."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    def read(
        self, topic: str, partition: int, start_offset: int
    ) -> Iterator[tuple[int, bytes | None, bytes | None]]:
        for r in committed_records(self.bootstrap, topic, partition):
            if r.offset >= start_offset:
                yield r.offset, r.key, r.value
