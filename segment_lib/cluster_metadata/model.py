"""The decoded forms of ``__cluster_metadata`` records (the contract other modules read).

A :class:`MetadataRecord` is one metadata record value decoded as Kafka's
``MetadataRecordSerde`` reads it and its generated JSON converter prints it; a
:class:`MetadataEntry` is one record of the Raft log or of a snapshot, with its offset and time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["UNKNOWN_TYPE", "MetadataEntry", "MetadataRecord"]

#: ``type_name`` of a record whose type id or version is not known, or whose bytes do not fit
UNKNOWN_TYPE = "UNKNOWN"


@dataclass(frozen=True, slots=True)
class MetadataRecord:
    """One decoded metadata record value.

    Attributes:
        type_name: Kafka's ``MetadataRecordType`` name in UPPER_SNAKE as kafka-dump-log prints
            it in ``"type"`` (``"TOPIC_RECORD"``, ``"CONFIG_RECORD"``, ...), or ``"UNKNOWN"``
            when the type id or version is not known or the bytes do not decode (then ``data``
            is empty and ``error`` says why).
        type_id: the record's api key (-1 when not even that could be read).
        version: the record's version (-1 when it could not be read).
        data: the fields, named and valued as Kafka's generated JSON converter prints them
            (camelCase; Uuid as Kafka's URL-safe base64 text; bytes as base64; absent tagged
            fields omitted). SCRAM ``salt``/``storedKey``/``serverKey`` are left out unless the
            decoder was asked for secrets.
        error: why the record is ``UNKNOWN``, naming where (file, offset) and the byte position.
    """

    type_name: str
    type_id: int
    version: int
    data: dict[str, Any]
    error: str | None = None


@dataclass(frozen=True, slots=True)
class MetadataEntry:
    """One record of the metadata log or of a snapshot.

    Attributes:
        offset: the Raft log offset of the record.
        timestamp_ms: the record's timestamp (the batch's append time: KRaft writes CreateTime
            with every record of a batch at the same time).
        record: the decoded metadata record; ``None`` for a KRaft control record.
        control: the control record's type name (``LEADER_CHANGE``, ``SNAPSHOT_HEADER``,
            ``SNAPSHOT_FOOTER``, ``KRAFT_VERSION``, ``KRAFT_VOTERS``, ``UNKNOWN``), else ``None``.
        snapshot_id: ``"<endOffset>-<epoch>"`` when read from a ``.checkpoint`` snapshot
            (``"bootstrap"`` for ``bootstrap.checkpoint``), else ``None``.
    """

    offset: int
    timestamp_ms: int
    record: MetadataRecord | None
    control: str | None = None
    snapshot_id: str | None = None
