"""The shape of the decoded metadata log entries the history consumes.

The decoder lives in ``segment_lib.cluster_metadata`` (``MetadataRecord``, ``MetadataEntry``);
the history depends only on these attributes (structural typing), so that it can be fed by the
archive reader (``kafka_archive.archive.metadata_log.iter_archived_metadata``), by a test, or by
anything else that yields the same fields. Record ``data`` uses the field names of Kafka's JSON
schemas (camelCase) and the values of Kafka's generated JSON converter (Uuids in Kafka's
base64 form, absent tagged fields omitted).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["MetadataEntryLike", "MetadataRecordLike"]


class MetadataRecordLike(Protocol):
    """A decoded metadata record (``segment_lib.cluster_metadata.MetadataRecord``)."""

    @property
    def type_name(self) -> str: ...  # "TOPIC_RECORD", ..., "UNKNOWN"

    @property
    def version(self) -> int: ...

    @property
    def data(self) -> Mapping[str, Any]: ...

    @property
    def error(self) -> str | None: ...


class MetadataEntryLike(Protocol):
    """One entry of the metadata log (``segment_lib.cluster_metadata.MetadataEntry``)."""

    @property
    def offset(self) -> int: ...

    @property
    def timestamp_ms(self) -> int: ...

    @property
    def record(self) -> MetadataRecordLike | None: ...  # None: a KRaft control record

    @property
    def snapshot_id(self) -> str | None: ...  # "<endOffset>-<epoch>": read from a .checkpoint
