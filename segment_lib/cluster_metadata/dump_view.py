"""What ``segments dump`` adds to a ``__cluster_metadata`` record (kafka-dump-log's
``--cluster-metadata-decoder`` view), as JSON-ready fields.

* a metadata record: ``{"metadata": {"type", "version", "data"}}``, the object whose
  :func:`~segment_lib.cluster_metadata.codec.kafka_json` text is what kafka-dump-log prints after
  ``payload:``, except that SCRAM ``salt``/``storedKey``/``serverKey`` are ``"[redacted]"``
  (kafka-dump-log prints them; a dump is often pasted into tickets); or, for a value that does
  not decode, ``{"metadata_error": "Error at offset N, skipping. <why, with the byte>"}``;
* a KRaft control record: ``{"data": {...}}`` (its value at version 0, as Kafka reads it), or
  ``{"data_error": ...}``.
"""

from __future__ import annotations

from typing import Any, Final

from segment_lib.cluster_metadata.codec import decode_control_value, decode_metadata_record
from segment_lib.cluster_metadata.model import UNKNOWN_TYPE
from segment_lib.errors import CorruptRecordError

__all__ = ["CONTROL_LABELS", "REDACTED", "control_fields", "metadata_fields"]

#: how kafka-dump-log 4.x labels a KRaft control record's JSON (``| offset: ... <label> {...}``)
CONTROL_LABELS: Final = {
    "LEADER_CHANGE": "LeaderChange:",
    "SNAPSHOT_HEADER": "SnapshotHeader",
    "SNAPSHOT_FOOTER": "SnapshotFooter",
    "KRAFT_VERSION": "KRaftVersion",
    "KRAFT_VOTERS": "KRaftVoters",
}

#: what the dump prints instead of a SCRAM salt or key
REDACTED: Final = "[redacted]"
_SECRET_FIELDS: Final = frozenset({"salt", "saltedPassword", "storedKey", "serverKey"})


def metadata_fields(value: bytes | None, offset: int, where: str) -> dict[str, Any]:
    """The dump's fields for one metadata record value (see the module docstring)."""
    rec = decode_metadata_record(
        value or b"",
        where=f"{where} (record at offset {offset}; position in the value)",
        include_secrets=True,
    )
    if rec.type_name == UNKNOWN_TYPE:
        return {"metadata_error": f"Error at offset {offset}, skipping. {rec.error}"}
    data = {k: REDACTED if k in _SECRET_FIELDS else v for k, v in rec.data.items()}
    return {"metadata": {"type": rec.type_name, "version": rec.version, "data": data}}


def control_fields(control_type: str, value: bytes | None, where: str) -> dict[str, Any]:
    """The dump's fields for a KRaft control record (nothing for COMMIT/ABORT markers)."""
    try:
        data = decode_control_value(control_type, value, where=where)
    except CorruptRecordError as exc:
        return {"data_error": str(exc)}
    return {} if data is None else {"data": data}
