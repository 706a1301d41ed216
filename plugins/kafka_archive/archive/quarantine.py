"""Quarantine: where corrupt segments go, and the error record that says why.

A segment that fails verification while being archived (a batch CRC mismatch, a malformed batch,
a torn tail in a *rolled* segment, a malformed index) is never archived as good: no manifest is
written for it. Instead its files are copied, under their broker file names, to::

    <cluster>/_quarantine/<topic>/<partition>/<baseOffset:020d>-<sha16 of .log>/<file name>

beside an ``error.json`` (:class:`QuarantineRecord`) naming the file, the byte position and what
was expected there, so an operator can inspect the evidence even after the broker deleted the
segment. Keys are content-addressed like the rest of the archive: a later run that meets the
same corrupt bytes re-detects the corruption but uploads nothing new and keeps the first
``error.json``. The planner uses the ``error.json`` keys to prefer another replica for that range.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from kafka_archive.archive.discovery import ProblemInfo
from kafka_archive.archive.layout import QUARANTINE_ERROR_FILE, quarantine_prefix

__all__ = [
    "QUARANTINE_FORMAT_VERSION",
    "QuarantineFile",
    "QuarantineRecord",
    "quarantine_error_key",
]

QUARANTINE_FORMAT_VERSION: Final = 1


class QuarantineFile(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    key: str
    size: int
    sha256: str


class QuarantineRecord(BaseModel):
    """``error.json`` of a quarantined segment."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    format_version: int = QUARANTINE_FORMAT_VERSION
    kind: Literal["kafka-archive/quarantine"] = "kafka-archive/quarantine"
    cluster: str
    topic: str
    partition: int
    base_offset: int
    end_offset: int
    segment_sha256: str
    broker_id: int
    log_dir: str
    hostname: str | None = None
    detected_at: datetime
    error: ProblemInfo
    files: list[QuarantineFile] = Field(default_factory=list)
    next_steps: str = (
        "Inspect the file at the byte position with `kafka-archive segments dump`; if another "
        "replica holds a good copy the next run archives that one (reported as "
        "quarantined_replaced); otherwise restore the segment from a healthy replica or accept "
        "the loss, then delete this quarantine entry"
    )

    def to_json_bytes(self) -> bytes:
        return (json.dumps(self.model_dump(mode="json"), indent=2) + "\n").encode()


def quarantine_error_key(
    cluster: str, topic: str, partition: int, base_offset: int, log_sha256: str
) -> str:
    return quarantine_prefix(cluster, topic, partition, base_offset, log_sha256) + (
        QUARANTINE_ERROR_FILE
    )
