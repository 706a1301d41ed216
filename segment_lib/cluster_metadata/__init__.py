"""KRaft's ``__cluster_metadata`` log: metadata records, control records, snapshots.

Bytes only. The package re-exports its API:

* :mod:`.model`: :class:`MetadataRecord`, :class:`MetadataEntry` (the decoded forms);
* :mod:`.codec`: :func:`decode_metadata_record` (one record value, never raises),
  :func:`decode_control_value` (a KRaft control record's value), :func:`kafka_json` (JSON text as
  Kafka's Jackson prints it), :data:`RECORD_TYPES` (type id -> name);
* :mod:`.files`: :func:`iter_metadata_file` (a ``.log`` segment or a ``.checkpoint`` snapshot),
  :func:`parse_snapshot_name`;
* :mod:`.schemas`: every record layout of the supported Kafka releases, as data (generated from
  Kafka's own JSON schemas).
"""

from segment_lib.cluster_metadata.codec import (
    RECORD_TYPES,
    decode_control_value,
    decode_metadata_record,
    kafka_json,
)
from segment_lib.cluster_metadata.files import iter_metadata_file, parse_snapshot_name
from segment_lib.cluster_metadata.model import UNKNOWN_TYPE, MetadataEntry, MetadataRecord

__all__ = [
    "RECORD_TYPES",
    "UNKNOWN_TYPE",
    "MetadataEntry",
    "MetadataRecord",
    "decode_control_value",
    "decode_metadata_record",
    "iter_metadata_file",
    "kafka_json",
    "parse_snapshot_name",
]
