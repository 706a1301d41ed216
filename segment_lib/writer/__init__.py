"""A broker-faithful writer of Kafka log directories, for tests and the demo.

* :mod:`~segment_lib.writer.encode`: pure encoders of magic 2 batches and magic 0/1 messages.
* :class:`PartitionWriter`: one partition directory (leader or follower replica), with Kafka's
  rolling, index, producer-snapshot and transaction-index rules (:class:`SegmentState` in
  :mod:`~segment_lib.writer.segment_state`, producer state in
  :mod:`~segment_lib.writer.producer_state`, an append's records and result in
  :mod:`~segment_lib.writer.append`).
* :class:`ManualClock`, :func:`new_topic_id`: deterministic time and ids
  (:mod:`~segment_lib.writer.deterministic`).
* :func:`compact`: one log-cleaner round over a partition.
* :class:`BrokerWriter`: a broker's log dirs, checkpoints and ``__consumer_offsets``.
* :func:`write_demo_cluster`: a deterministic multi-broker cluster for the demo and tests.
"""

from segment_lib.writer.append import AppendResult, chunk_max_timestamp
from segment_lib.writer.broker_writer import CONSUMER_OFFSETS, BrokerWriter
from segment_lib.writer.compaction import CleanResult, compact
from segment_lib.writer.demo import DemoCluster, TopicSpec, write_demo_cluster
from segment_lib.writer.deterministic import ManualClock, new_topic_id
from segment_lib.writer.encode import (
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
from segment_lib.writer.partition_writer import PartitionWriter, Transaction
from segment_lib.writer.segment_state import SegmentState

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
