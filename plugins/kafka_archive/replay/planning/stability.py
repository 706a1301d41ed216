"""Open transactions at the end of a range: the archive's last stable offset in a plan.

A transaction still open where the archive ends has no outcome the archive knows: a
``read_committed`` consumer of the source stops at its first offset (the partition's **last
stable offset**, LSO), because the records at and above it may still be committed or
aborted. A replay or an export does the same, and says so:

* planning (:func:`.plan.stabilize`) asks the source for each partition's LSO (the catalog records
  it at build time, :mod:`kafka_archive.catalog.stability`); a partition whose range reaches
  above it gets ``stable_offset`` and ``open_txns`` in its :class:`~.plan.PartitionPlan`, and
  delivers only up to :attr:`~.plan.PartitionPlan.deliver_end`;
* the reader enforces the same rule from the bytes it reads (a transaction it finds open at
  the end of its objects stops it at its first offset), so a stale plan cannot drop records;
* such a run ends ``incomplete`` (:data:`INCOMPLETE`), never ``complete``: its report names
  each partition, the open transactions (producer id, first offset) and what to do
  (:func:`incomplete_rows`). Its committed position is the LSO, so a later run of the same
  replay (or export), once the archive holds the transaction's marker and the catalog was
  built, delivers exactly the rest: committed records sent, aborted ones skipped, nothing
  twice;
* or, when asked (``--wait-for-open-transactions SECONDS``), :func:`wait_until_stable` polls
  the catalog until every partition's range is stable or the time is up, and the run starts
  then (ending ``incomplete`` when the time ran out).

Identity: the LSO is not part of the replay id (it does not change what is asked for), so the
later run is the same replay and resumes from its committed position.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from kafka_archive.replay.errors import ReplayError

__all__ = [
    "INCOMPLETE",
    "INCOMPLETE_HINT",
    "IncompleteRunError",
    "describe_incomplete",
    "incomplete_rows",
    "refresh_plan",
    "wait_until_stable",
]

if TYPE_CHECKING:
    from kafka_archive.replay.planning.plan import PartitionPlan, PlanSource, ReplayPlan

#: the status of a run that delivered everything up to the archive's last stable offset, but
#: not the records above it (a transaction was open where the archive ends)
INCOMPLETE = "incomplete"

#: what to do about an incomplete run
INCOMPLETE_HINT = (
    "Archive the partition again after the transaction ends (committed or aborted), run "
    "`kafka-archive catalog build`, then run the same command again: it delivers exactly the "
    "remaining records. Or pass --wait-for-open-transactions SECONDS to wait for the outcome."
)


class IncompleteRunError(ReplayError):
    """A run ended ``incomplete`` (raised where that must fail a task: Airflow)."""

    default_hint = INCOMPLETE_HINT


def refresh_plan(plan: ReplayPlan, source: PlanSource) -> ReplayPlan:
    """A stored ``plan`` (resumed by id) brought up to the archive as it is now: the same
    ranges and id, the objects to read (segments archived since, e.g. the one holding a
    marker, are read now) and the last stable offsets."""
    from kafka_archive.replay.planning.plan import object_ranges, stabilize

    spec = plan.spec
    parts = []
    for p in plan.partitions:
        if p.empty:
            parts.append(p)
            continue
        segments = source.segments(spec.cluster, spec.topic, p.partition)
        objects, tail, nbytes = object_ranges(segments, p.start_offset, p.end_offset)
        parts.append(p.model_copy(update={"objects": objects, "tail_objects": tail,
                                          "bytes": nbytes}))  # fmt: skip
    return stabilize(plan.model_copy(update={"partitions": parts}), source)


def describe_incomplete(
    part: PartitionPlan,
    stopped_at: int | None = None,
    open_txns: Sequence[tuple[int, int]] | None = None,
) -> str:
    """One line: which offsets were not delivered and which transaction holds them back
    (``open_txns``: as the reader found them, when the plan did not know them)."""
    stop = part.deliver_end if stopped_at is None else stopped_at
    found = part.open_txns or list(open_txns or [])
    txns = ", ".join(f"producer {pid} from offset {first}" for pid, first in found)
    held = part.end_offset - stop
    return (
        f"partition {part.partition}: offsets {stop}..{part.end_offset - 1} ({held}) not "
        f"delivered: they lie at or above the archive's last stable offset {stop}; "
        f"transaction(s) still open where the archive ends: {txns or 'unknown'}"
    )


def incomplete_rows(
    plan: ReplayPlan,
    positions: dict[int, int] | None = None,
    found_txns: dict[int, list[tuple[int, int]]] | None = None,
) -> list[dict[str, Any]]:
    """The report rows of the partitions that end incomplete: ``partition``,
    ``stable_offset`` (where delivery stopped), ``end_offset``, ``open_txns``
    (``[[producer_id, first_offset], ...]``) and ``message``. ``positions``: where each
    partition really stopped, ``found_txns``: the open transactions its reader found (the
    reader may stop earlier than planned: a plan that did not know the transaction)."""
    rows = []
    for p in plan.partitions:
        stop = (positions or {}).get(p.partition, p.deliver_end)
        if stop >= p.end_offset:
            continue
        txns = p.open_txns or list((found_txns or {}).get(p.partition, []))
        rows.append(
            {
                "partition": p.partition,
                "stable_offset": stop,
                "end_offset": p.end_offset,
                "open_txns": [list(t) for t in txns],
                "message": describe_incomplete(p, stop, txns),
            }
        )
    return rows


def pause(seconds: float) -> None:
    """How :func:`wait_until_stable` waits between looks at the catalog (a test replaces it)."""
    time.sleep(seconds)


def wait_until_stable(
    replan: Callable[[], ReplayPlan],
    timeout_s: float,
    *,
    poll_s: float = 10.0,
    sleep: Callable[[float], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    on_wait: Callable[[ReplayPlan], None] | None = None,
) -> ReplayPlan:
    """Plan again (``replan``: from a fresh look at the catalog) until no partition's range
    reaches above the archive's last stable offset, or ``timeout_s`` seconds passed; the last
    plan either way (an incomplete one ends ``incomplete``). ``on_wait`` is told before each
    pause."""
    deadline = clock() + max(0.0, timeout_s)
    while True:
        plan = replan()
        left = deadline - clock()
        if not plan.incomplete or left <= 0:
            return plan
        if on_wait is not None:
            on_wait(plan)
        (sleep or pause)(min(poll_s, left))
