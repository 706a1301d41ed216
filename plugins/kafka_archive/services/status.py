"""The platform's health in one view: ``kafka-archive status`` and the on-call page's panel.

:class:`StatusService` reads the catalog's health facts (:func:`kafka_archive.metrics.snapshot.
read_snapshot`, the same facts the metrics expose), optionally asks the live clusters for their
ends (:func:`kafka_archive.metrics.cluster.cluster_ends`), and judges each against
:class:`Thresholds`: the answer is a :class:`StatusReport`, a list of :class:`Check`s (``ok``,
``warn``: worth a look in working hours, ``fail``: needs a human now) plus the rows an SRE
reads first (last archive per broker or fetcher, lag, catalog freshness, follower position vs
the cluster's ``__consumer_offsets`` end, open integrity problems, running replays, prunes).

The thresholds mirror the chart's alert rules (``monitoring.alerts`` in values.yaml), so the
page and Alertmanager say the same thing about the same catalog.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kafka_archive.metrics.cluster import CONSUMER_OFFSETS, ClusterEnds, ClusterTarget, cluster_ends
from kafka_archive.metrics.collector import archive_lag, replay_eta_s
from kafka_archive.metrics.snapshot import Snapshot, read_snapshot
from kafka_archive.services.resources import ResourceService

__all__ = ["Check", "StatusReport", "StatusService", "Thresholds", "format_duration", "judge"]

OK, WARN, FAIL = "ok", "warn", "fail"
_RANK = {OK: 0, WARN: 1, FAIL: 2}


@dataclass(frozen=True, slots=True)
class Thresholds:
    """When a fact needs a human (seconds, offsets). Defaults equal the chart's alert
    defaults (helm/kafka-archive/values.yaml ``monitoring.alerts``)."""

    #: a broker (or the fetcher) archived nothing for this long
    archive_max_age_s: float = 6 * 3600
    #: a partition's newest archived record is this old while the cluster holds newer ones
    lag_max_s: float = 3600
    #: the newest successful catalog build is this old
    catalog_max_age_s: float = 6 * 3600
    #: the follower stored nothing for this long while it had something to read
    follower_max_age_s: float = 900
    #: offsets of __consumer_offsets the follower may be behind before it counts as stopped
    follower_max_lag: int = 10_000
    #: a prune range planned this long ago and still not finished
    prune_max_unfinished_s: float = 3600
    #: a planned or running replay committed no progress for this long
    replay_stall_s: float = 900


@dataclass(frozen=True, slots=True)
class Check:
    """One judged fact: ``area`` (archive, lag, catalog, follower, integrity, coverage,
    prune, replay, cluster), ``subject`` (what it is about), ``level`` and a sentence."""

    area: str
    subject: str
    level: str
    message: str


@dataclass(slots=True)
class StatusReport:
    """The health view at ``now_ms``: the checks, worst first, and the facts behind them."""

    now_ms: int
    checks: list[Check] = field(default_factory=list)
    brokers: list[dict[str, Any]] = field(default_factory=list)
    lag: list[dict[str, Any]] = field(default_factory=list)
    catalog: dict[str, Any] = field(default_factory=dict)
    follower: list[dict[str, Any]] = field(default_factory=list)
    integrity: dict[str, int] = field(default_factory=dict)
    replays: list[dict[str, Any]] = field(default_factory=list)
    prunes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def level(self) -> str:
        """The worst check's level (``ok`` with no checks)."""
        return max((c.level for c in self.checks), key=_RANK.__getitem__, default=OK)

    @property
    def needs_human(self) -> bool:
        """True when a check failed: ``status`` exits 1, the page shows red."""
        return self.level == FAIL

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` answer and the API's body (times in ms and ISO-8601 UTC)."""
        return {
            "level": self.level,
            "needs_human": self.needs_human,
            "now_ms": self.now_ms,
            "checks": [asdict(c) for c in self.checks],
            "brokers": self.brokers,
            "lag": self.lag,
            "catalog": self.catalog,
            "follower": self.follower,
            "integrity": self.integrity,
            "replays": self.replays,
            "prunes": self.prunes,
        }


def _age_s(now_ms: int, then_ms: int) -> float | None:
    return None if then_ms <= 0 else max(0.0, (now_ms - then_ms) / 1000.0)


def format_duration(seconds: float) -> str:
    s = int(seconds)
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    if s < 172800:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600}h"


_dur = format_duration


def judge(
    snap: Snapshot, answers: Sequence[ClusterEnds] = (), thresholds: Thresholds | None = None
) -> StatusReport:
    """The :class:`StatusReport` of ``snap`` (and the clusters' ``answers``): pure, so that
    every rule is tested on hand-made facts."""
    th = thresholds or Thresholds()
    rep = StatusReport(now_ms=snap.now_ms)
    by_cluster = {a.cluster: a for a in answers}
    _judge_archive(rep, snap, th)
    _judge_lag(rep, snap, by_cluster, th)
    _judge_catalog(rep, snap, th)
    _judge_follower(rep, snap, by_cluster, th)
    _judge_problems(rep, snap)
    _judge_prunes(rep, snap, th)
    _judge_replays(rep, snap, th)
    rep.checks.sort(key=lambda c: (-_RANK[c.level], c.area, c.subject))
    return rep


def _judge_archive(rep: StatusReport, snap: Snapshot, th: Thresholds) -> None:
    now = snap.now_ms
    if not snap.brokers:
        rep.checks.append(Check("archive", "-", WARN, "the catalog holds no archived segment yet"))
    for b in snap.brokers:
        who = f"{b.cluster} broker {b.broker}" if b.broker else f"{b.cluster} fetcher"
        age = _age_s(now, b.last_archived_ms) or 0.0
        rep.brokers.append(
            {
                "cluster": b.cluster,
                "broker": b.broker or None,
                "last_archived_ms": b.last_archived_ms,
                "age_s": round(age, 1),
                "segments": b.segments,
            }
        )
        if age > th.archive_max_age_s:
            rep.checks.append(
                Check(
                    "archive",
                    who,
                    FAIL,
                    f"nothing archived for {_dur(age)} (limit {_dur(th.archive_max_age_s)})",
                )
            )
        else:
            rep.checks.append(Check("archive", who, OK, f"last archive {_dur(age)} ago"))


def _judge_lag(
    rep: StatusReport, snap: Snapshot, by_cluster: dict[str, ClusterEnds], th: Thresholds
) -> None:
    for name, ans in sorted(by_cluster.items()):
        if ans.error and not ans.ends:
            rep.checks.append(Check("cluster", name, WARN, f"cluster did not answer: {ans.error}"))
    # one row per topic: its worst partition (a topic of 1000 partitions is one line)
    worst: dict[tuple[str, str], dict[str, Any]] = {}
    for p in snap.partitions:
        answer = by_cluster.get(p.cluster)
        hw = answer.ends.get((p.topic, p.partition)) if answer else None
        if hw is None:
            continue
        offsets, seconds = archive_lag(p.end_offset, hw, p.max_timestamp_ms, snap.now_ms)
        row = worst.setdefault(
            (p.cluster, p.topic),
            {
                "cluster": p.cluster,
                "topic": p.topic,
                "partitions": 0,
                "lag_offsets": 0,
                "lag_seconds": 0.0,
                "worst_partition": p.partition,
            },
        )
        row["partitions"] += 1
        row["lag_offsets"] += offsets
        if seconds > row["lag_seconds"]:
            row["lag_seconds"] = round(seconds, 1)
            row["worst_partition"] = p.partition
    for (cluster, topic), row in sorted(worst.items()):
        rep.lag.append(row)
        subject = f"{cluster}/{topic}"
        if row["lag_seconds"] > th.lag_max_s:
            rep.checks.append(
                Check(
                    "lag",
                    subject,
                    FAIL,
                    f"archive {_dur(row['lag_seconds'])} behind on "
                    f"partition {row['worst_partition']} ({row['lag_offsets']} offsets in all)",
                )
            )


def _judge_catalog(rep: StatusReport, snap: Snapshot, th: Thresholds) -> None:
    b = snap.builds
    age = _age_s(snap.now_ms, b.last_success_ms)
    rep.catalog = {
        "last_success_ms": b.last_success_ms or None,
        "age_s": None if age is None else round(age, 1),
        "last_failure_ms": b.last_failure_ms or None,
        "last_failure": b.last_failure_summary[:300] or None,
        "running": b.running,
        "builds": b.by_status,
    }
    if age is None:
        level = FAIL if snap.brokers else WARN
        rep.checks.append(Check("catalog", "build", level, "no catalog build has succeeded yet"))
        return
    if b.last_failure_ms > b.last_success_ms:
        rep.checks.append(
            Check(
                "catalog",
                "build",
                FAIL,
                "the newest catalog build failed "
                f"{_dur(_age_s(snap.now_ms, b.last_failure_ms) or 0)} ago",
            )
        )
    if age > th.catalog_max_age_s:
        rep.checks.append(
            Check(
                "catalog",
                "freshness",
                FAIL,
                f"newest successful build is {_dur(age)} old (limit {_dur(th.catalog_max_age_s)})",
            )
        )
    else:
        rep.checks.append(Check("catalog", "freshness", OK, f"built {_dur(age)} ago"))


def _judge_follower(
    rep: StatusReport, snap: Snapshot, by_cluster: dict[str, ClusterEnds], th: Thresholds
) -> None:
    for cluster in sorted({f.cluster for f in snap.follower}):
        rows = [f for f in snap.follower if f.cluster == cluster]
        position = sum(r.next_offset for r in rows)
        age = _age_s(snap.now_ms, max(r.updated_at_ms for r in rows)) or 0.0
        answer = by_cluster.get(cluster)
        lag: int | None = None
        if answer is not None and answer.ends:
            stored = {r.partition: r.next_offset for r in rows}
            lag = sum(
                max(0, end - stored.get(p, 0))
                for (t, p), end in answer.ends.items()
                if t == CONSUMER_OFFSETS
            )
        rep.follower.append(
            {
                "cluster": cluster,
                "partitions": len(rows),
                "position": position,
                "end": None if lag is None else position + lag,
                "lag_offsets": lag,
                "age_s": round(age, 1),
            }
        )
        stopped = age > th.follower_max_age_s
        if lag is not None and lag > th.follower_max_lag and stopped:
            rep.checks.append(
                Check(
                    "follower",
                    cluster,
                    FAIL,
                    f"{lag} offsets behind __consumer_offsets and "
                    f"nothing stored for {_dur(age)}: the cleaner may be removing commits",
                )
            )
        elif lag is None and stopped:
            rep.checks.append(
                Check(
                    "follower",
                    cluster,
                    WARN,
                    f"nothing stored for {_dur(age)} (no cluster asked: idle, or stopped?)",
                )
            )
        else:
            rep.checks.append(Check("follower", cluster, OK, f"last stored {_dur(age)} ago"))


def _judge_problems(rep: StatusReport, snap: Snapshot) -> None:
    rep.integrity = dict(sorted(snap.integrity.items()))
    total = sum(snap.integrity.values())
    if total:
        kinds = ", ".join(f"{n} {k}" for k, n in rep.integrity.items())
        rep.checks.append(
            Check(
                "integrity",
                "objects",
                FAIL,
                f"{total} open integrity problem(s): {kinds} (kafka-archive catalog problems)",
            )
        )
    missing: dict[tuple[str, str], int] = {}
    for (cluster, topic, kind), n in snap.coverage.items():
        if kind in ("missing", "divergent", "corrupt"):
            missing[(cluster, topic)] = missing.get((cluster, topic), 0) + n
    for (cluster, topic), n in sorted(missing.items()):
        rep.checks.append(
            Check(
                "coverage",
                f"{cluster}/{topic}",
                WARN,
                f"{n} coverage problem(s) (kafka-archive catalog gaps)",
            )
        )


def _judge_prunes(rep: StatusReport, snap: Snapshot, th: Thresholds) -> None:
    for pr in snap.prunes:
        stuck = _age_s(snap.now_ms, pr.oldest_unfinished_ms)
        rep.prunes.append(
            {
                "cluster": pr.cluster,
                "done": pr.done,
                "unfinished": pr.unfinished,
                "last_done_ms": pr.last_done_ms or None,
                "bytes_pruned": pr.bytes_pruned,
                "oldest_unfinished_ms": pr.oldest_unfinished_ms or None,
            }
        )
        if pr.unfinished and stuck is not None and stuck > th.prune_max_unfinished_s:
            rep.checks.append(
                Check(
                    "prune",
                    pr.cluster,
                    FAIL,
                    f"{pr.unfinished} pruned range(s) planned "
                    f"{_dur(stuck)} ago and not finished: re-run kafka-archive archive prune",
                )
            )


def _judge_replays(rep: StatusReport, snap: Snapshot, th: Thresholds) -> None:
    for r in snap.active_replays:
        idle = _age_s(snap.now_ms, r.last_progress_ms) or 0.0
        eta = replay_eta_s(r.records_sent, r.offsets_remaining, r.created_ms, snap.now_ms)
        rep.replays.append(
            {
                "replay_id": r.replay_id,
                "cluster": r.cluster,
                "topic": r.topic,
                "status": r.status,
                "records_sent": r.records_sent,
                "offsets_remaining": r.offsets_remaining,
                "partitions": r.partitions,
                "partitions_done": r.partitions_done,
                "idle_s": round(idle, 1),
                "eta_s": None if eta is None else round(eta, 1),
            }
        )
        if idle > th.replay_stall_s:
            rep.checks.append(
                Check(
                    "replay",
                    r.replay_id,
                    FAIL,
                    f"{r.status}, no progress for {_dur(idle)} (kafka-archive replay status)",
                )
            )


class StatusService(ResourceService):
    """The health view of the catalog the settings name (see the module docstring)."""

    def status(
        self,
        targets: Sequence[ClusterTarget] = (),
        *,
        thresholds: Thresholds | None = None,
        now_ms: int | None = None,
    ) -> StatusReport:
        """Read the catalog, ask each of ``targets`` for its ends, judge."""
        now = int(time.time() * 1000) if now_ms is None else now_ms
        snap = read_snapshot(self.resources.catalog(), now_ms=now)
        answers = [
            cluster_ends(
                t, [(p.topic, p.partition) for p in snap.partitions if p.cluster == t.name]
            )
            for t in targets
        ]
        return judge(snap, answers, thresholds)
