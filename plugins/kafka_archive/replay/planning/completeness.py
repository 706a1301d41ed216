"""Completeness is a contract: every hole of a replay's range, known before it starts.

A **hole** (:class:`PlanHole`) is a span of source offsets inside the requested range that the
replay cannot deliver:

* ``missing``: no archived segment holds them (never archived, or deleted by retention before
  the archiver saw them);
* ``corrupt``, ``misfiled``, ``unreadable``, ... : the catalog refused the object that held them
  (it is quarantined: the catalog never serves it), with its object key, byte position and
  reason when known;
* ``not-archived``: an explicit ``offset:N`` bound outside the archived span;
* ``pruned``: a retention policy deleted them (``kafka-archive archive prune``); the reason
  names the policy and when ("pruned by policy X at T"). A prune deletes the oldest data, so
  these lie before the retained span: they are holes of a request that starts inside them (an
  ``offset:`` or ``time:`` before the first retained record), not of one from ``earliest``
  (which means the retained start, as the broker's log start offset does). ``--allow-gaps``
  replays the rest and names them in the plan, like any hole (:func:`pruned_holes`).

Holes come from the catalog's coverage problems (:func:`kafka_archive.catalog.queries.gaps`,
read generically: any kind but ``overlap``/``divergent``, and no problem whose ``detail.served``
says another sound version serves its offsets, e.g. a refused duplicate replica) and from
the requested bounds. Offsets *provably absent* in the source are not holes: offsets inside a
segment's ``[base_offset, end_offset)`` that no batch holds were removed by compaction, control
records (transaction markers) and aborted data are never delivered by design.

A plan with holes is refused (:class:`ReplayGapsError`) unless the request allows gaps
(``--allow-gaps``); a run's final status is ``complete`` only for a plan without holes, and
``complete-with-gaps`` when they were allowed (see :func:`final_status`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import Field

from kafka_archive.frozen import FrozenModel
from kafka_archive.replay.errors import ReplayConfigError

__all__ = [
    "COMPLETE",
    "COMPLETE_WITH_GAPS",
    "FINISHED_STATUSES",
    "HoleSource",
    "PlanHole",
    "ReplayGapsError",
    "bound_holes",
    "clip_holes",
    "describe_hole",
    "disjoint_holes",
    "final_status",
    "gaps_refusal",
    "holes_from_gaps",
    "pruned_holes",
]

#: every requested offset was delivered or is provably absent in the source
COMPLETE = "complete"
#: finished, but the plan's holes (allowed with --allow-gaps) were not delivered
COMPLETE_WITH_GAPS = "complete-with-gaps"
#: the statuses of a replay that ran to its end ("done": rows written before this contract)
FINISHED_STATUSES = frozenset({COMPLETE, COMPLETE_WITH_GAPS, "done"})

#: catalog coverage problems that are not holes: another archived version serves the offsets
_SERVED_KINDS = frozenset({"overlap", "divergent"})

_REASONS = {
    "missing": "no archived segment holds these offsets (never archived, or deleted by "
    "retention before the archiver copied them)",
    "corrupt": "the archived object failed its integrity checks (quarantined, not served)",
    "misfiled": "the archived object does not belong where its manifest says (quarantined)",
    "unreadable": "the archived object cannot be read from the store",
    "not-archived": "outside the archived span of the partition",
    "pruned": "deleted from the archive by a retention policy (kafka-archive archive prune)",
}


class PlanHole(FrozenModel):
    """Offsets ``first_offset..last_offset`` (inclusive) of one partition that the replay
    cannot deliver, and why."""

    kind: str
    first_offset: int
    last_offset: int
    reason: str
    object_key: str | None = None
    byte_position: int | None = None
    detail: dict[str, Any] = Field(default_factory=dict)

    @property
    def offsets(self) -> int:
        return self.last_offset - self.first_offset + 1


@runtime_checkable
class HoleSource(Protocol):
    """A plan source that knows the archive's holes (the catalog does)."""

    def holes(self, cluster: str, topic: str, partition: int) -> Sequence[PlanHole]:
        """Every hole the archive has in the partition, in offset order."""
        ...


class ReplayGapsError(ReplayConfigError):
    """The plan has holes and gaps were not allowed."""

    default_hint = (
        "Repair or re-archive the objects named here and rebuild the catalog "
        "(`kafka-archive catalog build`), or pass --allow-gaps to replay around the holes "
        "(the run then ends `complete-with-gaps`)."
    )


def _first(detail: dict[str, Any], *names: str) -> Any:
    for name in names:
        value = detail.get(name)
        if value is not None:
            return value
    return None


def holes_from_gaps(entries: Iterable[Any], partition: int) -> list[PlanHole]:
    """The holes among the catalog's coverage problems of ``partition`` (duck-typed: anything
    with ``kind``, ``partition``, ``start_offset``, ``end_offset`` (inclusive) and ``detail``)."""
    out: list[PlanHole] = []
    for g in entries:
        detail: dict[str, Any] = dict(getattr(g, "detail", None) or {})
        if g.partition != partition or g.kind in _SERVED_KINDS or detail.get("served") is True:
            continue  # another archived version serves these offsets: nothing is lost
        error = detail.get("error") if isinstance(detail.get("error"), dict) else {}
        key = _first(detail, "object", "object_key", "key")
        position = _first(detail, "byte_position", "position")
        if position is None and error:
            position = _first(error, "byte_position", "position", "offset_in_file")
        reason = _first(detail, "reason", "message")
        if reason is None and error:
            reason = _first(error, "message", "reason")
        base = _REASONS.get(g.kind, f"the catalog reports {g.kind}")
        out.append(
            PlanHole(
                kind=str(g.kind),
                first_offset=int(g.start_offset),
                last_offset=int(max(g.end_offset, g.start_offset)),
                reason=f"{base}: {reason}" if reason else base,
                object_key=str(key) if key is not None else None,
                byte_position=int(position) if isinstance(position, int) else None,
                detail={k: v for k, v in detail.items() if k != "error"},
            )
        )
    return out


def clip_holes(
    holes: Iterable[PlanHole], start: int, end: int | None, *, open_start: bool
) -> list[PlanHole]:
    """The holes that touch ``[start, end)`` (``end=None``: the range runs to the end of the
    archive, so holes after it - e.g. a quarantined last segment - count; ``open_start``: the
    range starts at the archive's beginning, so holes before it count too)."""
    out = []
    for h in holes:
        if h.last_offset < start and not open_start:
            continue
        if end is not None and h.first_offset >= end:
            continue
        out.append(h)
    return sorted(out, key=lambda h: (h.first_offset, h.last_offset, h.kind))


def bound_holes(
    requested_start: int | None, requested_end: int | None, log_start: int, log_end: int
) -> list[PlanHole]:
    """Holes from explicit offset bounds outside the archived span ``[log_start, log_end)``:
    the request names offsets the archive does not hold."""
    out = []
    if requested_start is not None and requested_start < log_start:
        out.append(
            PlanHole(
                kind="not-archived",
                first_offset=requested_start,
                last_offset=log_start - 1,
                reason=f"{_REASONS['not-archived']}: the archive starts at offset {log_start}",
            )
        )
    if requested_end is not None and requested_end > log_end:
        out.append(
            PlanHole(
                kind="not-archived",
                first_offset=max(log_end, requested_start or 0),
                last_offset=requested_end - 1,
                reason=f"{_REASONS['not-archived']}: the archive ends before offset {log_end}",
            )
        )
    return out


#: which of two holes over the same offsets names them (lower first): the most specific cause
_RANK = {"pruned": 0, "missing": 2, "not-archived": 3}  # any other (integrity) kind: 1


def _subtract(lo: int, hi: int, covered: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``lo..hi`` (inclusive) outside the sorted, disjoint ``covered`` spans."""
    out = []
    at = lo
    for a, b in covered:
        if b < at:
            continue
        if a > hi:
            break
        if a > at:
            out.append((at, a - 1))
        at = max(at, b + 1)
        if at > hi:
            break
    if at <= hi:
        out.append((at, hi))
    return out


def disjoint_holes(
    holes: Iterable[PlanHole], lo: int | None = None, hi: int | None = None
) -> list[PlanHole]:
    """``holes`` clipped to the requested offsets ``lo..hi`` (inclusive; ``None``: open) and
    made disjoint: where holes overlap, the most specific kind (:data:`_RANK`) keeps the
    offsets, the others keep only what is left. In offset order; their ``offsets`` sum to the
    number of requested offsets the archive cannot deliver, each counted once."""
    covered: list[tuple[int, int]] = []
    out: list[PlanHole] = []
    ranked = sorted(holes, key=lambda h: (_RANK.get(h.kind, 1), h.first_offset, h.last_offset))
    for h in ranked:
        a = h.first_offset if lo is None else max(lo, h.first_offset)
        b = h.last_offset if hi is None else min(hi, h.last_offset)
        if a > b:
            continue
        for x, y in _subtract(a, b, covered):
            same = (x, y) == (h.first_offset, h.last_offset)
            out.append(h if same else h.model_copy(update={"first_offset": x, "last_offset": y}))
        covered = _merge([*covered, (a, b)])
    return sorted(out, key=lambda h: (h.first_offset, h.last_offset))


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def gaps_refusal(
    cluster: str, topic: str, holes: Sequence[tuple[int, PlanHole]]
) -> tuple[str, str | None]:
    """The message and hint of a :class:`ReplayGapsError` over ``holes`` (``(partition,
    hole)``, disjoint per partition: :func:`disjoint_holes`); the hint is ``None`` (the
    default) unless every hole was pruned."""
    lines = "; ".join(describe_hole(p, h) for p, h in holes[:10])
    more = f"; and {len(holes) - 10} more" if len(holes) > 10 else ""
    missing = sum(h.offsets for _p, h in holes)
    hint = None
    if holes and all(h.kind == "pruned" for _p, h in holes):
        hint = (
            "A retention policy deleted these offsets from the archive; they cannot be "
            "replayed. Start from the retained data (--from earliest, or a later time), or pass "
            "--allow-gaps to replay the rest (the run then ends `complete-with-gaps`)."
        )
    message = (
        f"the archive cannot deliver {missing} offset(s) of the requested range of "
        f"{cluster}/{topic} ({len(holes)} hole(s)): {lines}{more}"
    )
    return message, hint


def describe_hole(partition: int, hole: PlanHole) -> str:
    """One line for people: ``partition 0 offsets 229..684 (456): corrupt, object K at byte
    B: reason``."""
    where = ""
    if hole.object_key:
        where = f", object {hole.object_key}"
        if hole.byte_position is not None:
            where += f" at byte {hole.byte_position}"
    return (
        f"partition {partition} offsets {hole.first_offset}..{hole.last_offset} "
        f"({hole.offsets}): {hole.kind}{where}: {hole.reason}"
    )


def final_status(has_holes: bool) -> str:
    """The status of a replay that delivered everything its plan could."""
    return COMPLETE_WITH_GAPS if has_holes else COMPLETE


def pruned_holes(
    holes: Iterable[PlanHole],
    start: int,
    end: int | None,
    *,
    asked_before_start: bool,
) -> list[PlanHole]:
    """The ``pruned`` holes among ``holes`` that a request ``[start, end)`` hits: those inside
    it, and those before it when the request asked for a moment or offset before the retained
    span (``asked_before_start``: its start was moved up to the first retained offset)."""
    out = []
    for h in holes:
        if h.kind != "pruned":
            continue
        if end is not None and h.first_offset >= end:
            continue
        if h.last_offset < start and not asked_before_start:
            continue
        out.append(h)
    return out
