"""What a catalog build did: :class:`BuildReport` (also stored as JSON in ``build_runs``),
and the progress callback the driver calls as it goes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_archive.catalog.integrity import DEFAULT_VERIFY

__all__ = ["BuildReport", "ProgressFn"]

#: progress callback: (phase, done, total, bytes_done)
ProgressFn = Callable[[str, int, int, int], None]


@dataclass(slots=True)
class BuildReport:
    """What a build did (also stored as JSON in ``build_runs``)."""

    manifests: int = 0
    already_cataloged: int = 0
    segments_added: int = 0
    corrupt: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    re_extracted: int = 0
    intervals_added: int = 0
    commits_added: int = 0
    partitions_touched: int = 0
    deferred_partitions: int = 0
    bytes_read: int = 0
    seconds: float = 0.0
    run_id: int | None = None
    #: the integrity check used (``verify``)
    verify: str = DEFAULT_VERIFY
    #: refused manifests/objects, recorded in ``integrity_problems`` (``Problem.to_json()``)
    problems: list[dict[str, Any]] = field(default_factory=list)
    #: ids of earlier builds this one found dead and marked ``stale``
    stale_runs: list[int] = field(default_factory=list)
    #: new manifests not cataloged because a retention prune removed all their offsets
    pruned_skipped: int = 0
    #: what the metadata history build that follows a catalog build did per cluster with an
    #: archived metadata log (``ApplyReport.to_json()``; a failure is also in ``failed``)
    metadata_history: list[dict[str, Any]] = field(default_factory=list)
    #: the increment: segments not cataloged yet (pruned ones left out) and their bytes
    new_segments: int = 0
    new_bytes: int = 0
    #: where extraction ran (``in-process`` or ``spark``) and why (:mod:`.engine`)
    engine: str = ""
    engine_reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "manifests": self.manifests,
            "already_cataloged": self.already_cataloged,
            "segments_added": self.segments_added,
            "corrupt": self.corrupt,
            "failed": len(self.failed),
            "failures": self.failed,
            "re_extracted": self.re_extracted,
            "intervals_added": self.intervals_added,
            "commits_added": self.commits_added,
            "partitions_touched": self.partitions_touched,
            "deferred_partitions": self.deferred_partitions,
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 3),
            "run_id": self.run_id,
            "verify": self.verify,
            "problems": len(self.problems),
            "problem_list": self.problems,
            "stale_runs": self.stale_runs,
            "pruned_skipped": self.pruned_skipped,
            "metadata_history": self.metadata_history,
            "new_segments": self.new_segments,
            "new_bytes": self.new_bytes,
            "engine": self.engine,
            "engine_reason": self.engine_reason,
        }
