"""The report of a fetch archive run: per partition, what was fetched, stored and lost."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["FetchReport", "Hole", "PartitionReport"]


@dataclass(frozen=True, slots=True)
class Hole:
    """Offsets ``[start, end)`` the broker deleted (retention, DeleteRecords) before they were
    archived: they are in no archive."""

    topic: str
    partition: int
    start: int
    end: int


@dataclass(slots=True)
class PartitionReport:
    topic: str
    partition: int
    #: the topic id (Kafka's text form) of the incarnation archived, if the cluster has them
    topic_id: str | None = None
    #: where this run started (the resume point, or the log start for a new partition)
    from_offset: int = -1
    #: one past the last offset stored by this run (``from_offset`` when nothing was)
    to_offset: int = -1
    high_watermark: int = -1
    segments: int = 0
    batches: int = 0
    bytes_fetched: int = 0
    bytes_uploaded: int = 0
    #: compaction gaps met (legitimate; recorded in the manifests)
    offset_gaps: int = 0
    #: times fetched batches not stored yet were dropped and fetched again (the leader's log
    #: ended their leader epoch below them)
    rewinds: int = 0
    #: times another archiver of the partition was seen to have stored segments first, before
    #: an upload (this run went on from the store's end)
    yielded: int = 0
    #: segments not stored because another archiver claimed their base offset first (a
    #: group hand-over, two archivers: :mod:`~kafka_archive.archive.fetch.claims`); not an error
    fenced: int = 0
    #: every archived manifest key of this run
    manifests: list[str] = field(default_factory=list)
    error: str | None = None
    #: why the partition left the run before its end (its topic deleted or re-created)
    ended: str | None = None


@dataclass(slots=True)
class FetchReport:
    cluster: str
    store_uri: str
    started_at: str
    finished_at: str = ""
    stopped_by: str = ""
    partitions: list[PartitionReport] = field(default_factory=list)
    holes: list[Hole] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No partition failed (holes are recorded data loss, not a failure of the run)."""
        return not any(p.error for p in self.partitions)

    @property
    def segments(self) -> int:
        return sum(p.segments for p in self.partitions)

    @property
    def bytes_uploaded(self) -> int:
        return sum(p.bytes_uploaded for p in self.partitions)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "fetch_archive_report",
            "ok": self.ok,
            "segments": self.segments,
            "bytes_uploaded": self.bytes_uploaded,
            **asdict(self),
        }
