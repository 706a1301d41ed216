"""A broker-faithful writer of Kafka log directories, for tests and the demo.

* :mod:`~kafka_archive_dev.writer.encode`: pure encoders of magic 2 batches and magic 0/1 messages.
* :class:`PartitionWriter`: one partition directory (leader or follower replica), with Kafka's
  rolling, index, producer-snapshot and transaction-index rules (:class:`SegmentState` in
  :mod:`~kafka_archive_dev.writer.segment_state`, producer state in
  :mod:`~kafka_archive_dev.writer.producer_state`, an append's records and result in
  :mod:`~kafka_archive_dev.writer.append`).
* :class:`ManualClock`, :func:`new_topic_id`: deterministic time and ids
  (:mod:`~kafka_archive_dev.writer.deterministic`).
* :func:`compact`: one log-cleaner round over a partition.
* :class:`BrokerWriter`: a broker's log dirs, checkpoints and ``__consumer_offsets``.
* :func:`write_demo_cluster`: a deterministic multi-broker cluster for the demo and tests.
"""

from kafka_archive_dev.writer.append import AppendResult, chunk_max_timestamp
from kafka_archive_dev.writer.broker_writer import CONSUMER_OFFSETS, BrokerWriter
from kafka_archive_dev.writer.compaction import CleanResult, compact
from kafka_archive_dev.writer.demo import DemoCluster, TopicSpec, write_demo_cluster
from kafka_archive_dev.writer.deterministic import ManualClock, new_topic_id
from kafka_archive_dev.writer.encode import (
    NO_SEQUENCE,
    EncodedBatch,
    WriteRecord,
    encode_batch_v2,
    encode_control_batch,
    encode_empty_batch_v2,
    encode_legacy_batches,
    encode_legacy_message,
    encode_record_v2,
    encode_varint,
)
from kafka_archive_dev.writer.partition_writer import PartitionWriter, Transaction
from kafka_archive_dev.writer.segment_state import SegmentState

__all__ = [
    "CONSUMER_OFFSETS",
    "NO_SEQUENCE",
    "AppendResult",
    "BrokerWriter",
    "CleanResult",
    "DemoCluster",
    "EncodedBatch",
    "ManualClock",
    "PartitionWriter",
    "SegmentState",
    "TopicSpec",
    "Transaction",
    "WriteRecord",
    "chunk_max_timestamp",
    "compact",
    "encode_batch_v2",
    "encode_control_batch",
    "encode_empty_batch_v2",
    "encode_legacy_batches",
    "encode_legacy_message",
    "encode_record_v2",
    "encode_varint",
    "new_topic_id",
    "write_demo_cluster",
]
