"""An embedded Kafka-protocol cluster: librdkafka's built-in mock cluster, in this process.

The demo replays into it, and tests use it as a real Kafka wire-protocol peer. confluent-kafka
ships librdkafka but exposes no API for its mock cluster, so this module drives librdkafka's C
API through :mod:`ctypes`: it creates the cluster, creates topics with a chosen partition count
(the mock answers CreateTopics requests with an error) and takes brokers down and up. The cluster
lives as long as the :class:`EmbeddedKafka` object; any client, in any process, reaches it
through :attr:`EmbeddedKafka.bootstrap_servers`.

Known limits of the mock (librdkafka 2.16): read_committed consumers also receive records of
aborted transactions, zombie producers are not fenced, and timestamp ListOffsets is not
supported. It is a protocol peer for tests and the demo, not a broker.

:func:`read_to_end` reads partitions of any cluster back with a confluent-kafka consumer: how the
demo and the tests check what a replay wrote.
"""

from __future__ import annotations

import ctypes
import glob
import os
import time
from dataclasses import dataclass
from types import TracebackType
from typing import cast

import confluent_kafka

__all__ = ["ConsumedRecord", "EmbeddedKafka", "read_to_end"]


def _lib() -> ctypes.CDLL:
    libs = os.path.join(os.path.dirname(confluent_kafka.__file__), "..", "confluent_kafka.libs")
    found = sorted(glob.glob(os.path.join(libs, "librdkafka*.so*")))
    lib = ctypes.CDLL(found[0]) if found else ctypes.CDLL("librdkafka.so.1")
    vp, cp, i32 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32
    lib.rd_kafka_conf_new.restype = vp
    lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, ctypes.c_size_t]
    lib.rd_kafka_new.restype = vp
    lib.rd_kafka_new.argtypes = [ctypes.c_int, vp, cp, ctypes.c_size_t]
    lib.rd_kafka_destroy.argtypes = [vp]
    lib.rd_kafka_mock_cluster_new.restype = vp
    lib.rd_kafka_mock_cluster_new.argtypes = [vp, ctypes.c_int]
    lib.rd_kafka_mock_cluster_destroy.argtypes = [vp]
    lib.rd_kafka_mock_cluster_bootstraps.restype = cp
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
    lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_broker_set_down.argtypes = [vp, i32]
    lib.rd_kafka_mock_broker_set_up.argtypes = [vp, i32]
    lib.rd_kafka_mock_partition_set_leader.argtypes = [vp, cp, i32, i32]
    return lib


class EmbeddedKafka:
    """A librdkafka mock cluster of ``brokers`` brokers (ids 1..N) living in this process."""

    def __init__(self, brokers: int = 3) -> None:
        self._lib = _lib()
        err = ctypes.create_string_buffer(512)
        conf = self._lib.rd_kafka_conf_new()
        self._lib.rd_kafka_conf_set(conf, b"log_level", b"3", err, 512)
        self._rk = self._lib.rd_kafka_new(0, conf, err, 512)
        if not self._rk:
            raise RuntimeError(f"rd_kafka_new failed: {err.value.decode()}")
        self._mc = self._lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        if not self._mc:
            raise RuntimeError("rd_kafka_mock_cluster_new failed")
        self.broker_ids = list(range(1, brokers + 1))
        self.bootstrap_servers: str = self._lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        rc = self._lib.rd_kafka_mock_topic_create(
            self._mc, name.encode(), partitions, replication_factor
        )
        if rc:
            raise RuntimeError(f"mock topic create {name}: error {rc}")

    def broker_down(self, broker_id: int) -> None:
        self._lib.rd_kafka_mock_broker_set_down(self._mc, broker_id)

    def broker_up(self, broker_id: int) -> None:
        self._lib.rd_kafka_mock_broker_set_up(self._mc, broker_id)

    def set_leader(self, topic: str, partition: int, broker_id: int) -> None:
        self._lib.rd_kafka_mock_partition_set_leader(self._mc, topic.encode(), partition, broker_id)

    def close(self) -> None:
        if self._mc:
            self._lib.rd_kafka_mock_cluster_destroy(self._mc)
            self._mc = None
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None

    def __enter__(self) -> EmbeddedKafka:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True, slots=True)
class ConsumedRecord:
    """One record as a consumer sees it."""

    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def read_to_end(
    bootstrap: str,
    topic: str,
    partitions: list[int],
    *,
    isolation: str = "read_committed",
    timeout_s: float = 30.0,
) -> dict[int, list[ConsumedRecord]]:
    """Every record of ``topic``'s ``partitions`` from offset 0 up to the high watermarks taken
    when the call starts, in order, as a confluent-kafka consumer in a new group receives them
    (with read_committed: every transaction below the high watermarks resolved first).

    Raises :class:`TimeoutError` naming the partitions not read to their watermark within
    ``timeout_s``, and :class:`confluent_kafka.KafkaException` for any error the consumer
    reports, so a partial read is never mistaken for a short topic.
    """
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kafka-archive-readback-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
            "enable.partition.eof": True,
        }
    )
    # The ends are high watermarks, asked by a read_uncommitted client: a read_committed client's
    # ListOffsets answers the last stable offset, which on a real broker stays below a
    # transaction's records until its markers are written - a moment *after* commit_transaction
    # returns - so a read right after a commit found nothing. read_committed then reads on until
    # its position passes them (the last stable offset has moved past every transaction).
    ends_client = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"kafka-archive-readback-{time.monotonic_ns()}",
            "isolation.level": "read_uncommitted",
        }
    )
    out: dict[int, list[ConsumedRecord]] = {p: [] for p in partitions}
    try:
        try:
            ends = {
                p: ends_client.get_watermark_offsets(
                    confluent_kafka.TopicPartition(topic, p), timeout_s
                )[1]
                for p in partitions
            }
        finally:
            ends_client.close()
        todo = {p for p in partitions if ends[p] > 0}
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in partitions])
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            p, offset, error = msg.partition() or 0, msg.offset() or 0, msg.error()
            if error is not None:
                if error.code() != confluent_kafka.KafkaError._PARTITION_EOF:
                    raise confluent_kafka.KafkaException(error)
                if offset >= ends[p]:
                    todo.discard(p)
                continue
            # a consumer's header values are bytes or None (the stubs allow str, for producers)
            headers = cast(tuple[tuple[str, bytes | None], ...], tuple(msg.headers() or ()))
            out[p].append(
                ConsumedRecord(p, offset, msg.timestamp()[1], msg.key(), msg.value(), headers)
            )
        if todo:
            raise TimeoutError(
                f"{topic}: partitions {sorted(todo)} not read to their end in {timeout_s:g} s"
            )
    finally:
        consumer.close()
    return out
