"""One unfinished replay per intent: a re-run of the same request resumes it.

The runbook says "if a replay is interrupted, run the same `replay run` again". The replay id
is derived from the *resolved* plan, so with an open end (no ``--to``) or ``--from earliest``
the same command planned again after new segments were archived (or old ones pruned) got
another replay id: new progress keys, new transactional ids, and the records the killed run had
delivered were sent again (or, after a prune, the offsets between were silently skipped).

The **intent** (:func:`~.plan.intent_id`) is the request as given. Before a request runs,
:func:`resolve_intent` looks in the catalog for an *unfinished* replay of the same intent (any
status but :data:`CLOSED_STATUSES`: ``planned``, ``running`` - also a killed one - or
``failed``):

* none, or the one found is the newly planned replay itself: the new plan goes ahead;
* one other: the request **resumes it** - its stored plan, with its original resolved start and
  end (the end is not extended: records archived after it are for the next run of the command,
  once this replay is complete), taking from the new request only what does not change what
  is written (target settings such as secrets, rate limits, ``allow_gaps``, ``allow_same_topic``);
* none unfinished but finished ones (``complete``, ``complete-with-gaps``): the request
  **continues after them** - a follow-on replay from their end offsets (per partition) to the
  request's end, so records delivered before are never sent again; when nothing was archived
  since, the newest finished replay is answered (``already-done``). ``--force`` replays the
  whole range again instead;
* the request plans exactly as a replay that was abandoned: a new replay (a fresh id);
* ``--force`` while one is unfinished, or several unfinished (left by older versions): refused
  (:class:`ReplayIntentConflictError`) with the exact ``replay resume`` / ``replay abandon``
  commands.

``replay abandon`` (:meth:`kafka_archive.services.replay.ReplayService.abandon`) closes an
unfinished replay explicitly: it fences the replay's transactional ids on the target (aborting a
killed run's open transaction), releases the replay's object lease and marks it ``abandoned``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafka_archive.replay.bookkeeping.ledger import LedgerRow, ReplayLedger
from kafka_archive.replay.errors import EmptyRangeError, ReplayError
from kafka_archive.replay.planning.completeness import FINISHED_STATUSES
from kafka_archive.replay.planning.plan import Position, ReplayPlan, ReplaySpec, intent_id

__all__ = [
    "ABANDONED",
    "CLOSED_STATUSES",
    "INTERRUPTED",
    "ReplayIntentConflictError",
    "abandon_command",
    "fence",
    "resolve_intent",
    "resume_command",
    "unfinished_of_intent",
]

#: a replay closed explicitly by ``replay abandon`` (never resumed, never matched again)
ABANDONED = "abandoned"
#: what ``replay status`` shows for a ``running`` replay whose run is gone (killed)
INTERRUPTED = "interrupted"
#: statuses of replays that are over: a re-run of their intent plans a new replay
CLOSED_STATUSES = FINISHED_STATUSES | {ABANDONED}


class ReplayIntentConflictError(ReplayError):
    """The request matches an unfinished replay that it cannot simply resume."""


def resume_command(replay_id: str) -> str:
    return f"kafka-archive replay resume {replay_id}"


def abandon_command(replay_id: str) -> str:
    return f"kafka-archive replay abandon {replay_id}"


def _of_intent(ledger: ReplayLedger, plan: ReplayPlan) -> list[tuple[LedgerRow, ReplayPlan]]:
    """The catalog's replays whose request has ``plan``'s intent, oldest first, with their
    stored plans (the intent is computed from a stored request when the plan predates intents,
    so those are found too)."""
    want = plan.intent_id or intent_id(plan.spec)
    found = []
    for run in ledger.runs(cluster=plan.spec.cluster, topic=plan.spec.topic):
        stored = ReplayPlan.from_json(run.plan_json)
        if (stored.intent_id or intent_id(stored.spec)) == want:
            found.append((run, stored))
    return found


def unfinished_of_intent(ledger: ReplayLedger, plan: ReplayPlan) -> list[LedgerRow]:
    """The catalog's unfinished replays whose request has ``plan``'s intent, oldest first."""
    return [r for r, _p in _of_intent(ledger, plan) if r.status not in CLOSED_STATUSES]


def _resumed(stored: ReplayPlan, spec: ReplaySpec) -> ReplayPlan:
    """``stored`` (its ranges, holes, topic settings, replay id) run with the options of the
    new request ``spec`` that do not change what is written."""
    update = {
        "target": stored.spec.target.with_config(dict(spec.target.config)),
        "rate_limit_mb": spec.rate_limit_mb,
        "rate_limit_records": spec.rate_limit_records,
        "allow_gaps": spec.allow_gaps,
        "allow_same_topic": spec.allow_same_topic,
        "dry_run": spec.dry_run,
        "replay_path": spec.replay_path,
    }
    return stored.model_copy(update={"spec": stored.spec.model_copy(update=update)})


def resolve_intent(
    ledger: ReplayLedger, plan: ReplayPlan, replan: Callable[[ReplaySpec], ReplayPlan]
) -> tuple[ReplayPlan, str | None]:
    """The plan to run for a request planned as ``plan``: itself, the unfinished replay of
    the same intent, or a follow-on of its finished ones (see the module docstring; ``replan``
    plans a request against the catalog); with a note for the operator unless it is ``plan``.

    Raises:
        ReplayIntentConflictError: ``--force`` while a replay of the intent is unfinished, or
            several unfinished replays of the intent.
    """
    spec = plan.spec
    if spec.replay_id is not None:  # an explicit id (resume by id): nothing to look for
        return plan, None
    same = _of_intent(ledger, plan)
    if any(r.replay_id == plan.replay_id and r.status == ABANDONED for r, _p in same):
        # planned exactly as a replay the operator abandoned: a new replay (a fresh id), not
        # that one's progress again
        fresh = replan(spec.model_copy(update={"force": True}))
        fresh = fresh.model_copy(update={"spec": spec, "intent_id": plan.intent_id})
        return fresh, (
            f"replay {plan.replay_id} of this request was abandoned: this is a new replay "
            f"({fresh.replay_id})"
        )
    others = [
        r for r, _p in same if r.status not in CLOSED_STATUSES and r.replay_id != plan.replay_id
    ]
    if not others:
        finished = [(r, p) for r, p in same if r.status in FINISHED_STATUSES]
        if spec.force or not finished or any(r.replay_id == plan.replay_id for r, _p in same):
            return plan, None
        return _follow_on(plan, finished, replan)
    ids = [r.replay_id for r in others]
    if spec.force or len(others) > 1:
        why = (
            "--force would start a new replay beside it"
            if spec.force and len(others) == 1
            else f"{len(others)} unfinished replays of this request exist"
        )
        raise ReplayIntentConflictError(
            f"an unfinished replay of the same request exists ({', '.join(ids)}, status "
            f"{', '.join(sorted({r.status for r in others}))}): {why}",
            hint=_choices(ids),
            replay_ids=ids,
        )
    stored = ReplayPlan.from_json(others[0].plan_json)
    resumed = _resumed(stored, spec)
    ranges = ", ".join(
        f"{p.partition}: [{p.start_offset}, {p.end_offset})" for p in stored.partitions
    )
    note = (
        f"resuming the unfinished replay {stored.replay_id} of this request ({others[0].status}) "
        f"with its original ranges ({ranges}); records archived after its end are not part "
        "of it: run the same command again once it is complete to replay them"
    )
    return resumed, note


def _follow_on(
    plan: ReplayPlan,
    finished: list[tuple[LedgerRow, ReplayPlan]],
    replan: Callable[[ReplaySpec], ReplayPlan],
) -> tuple[ReplayPlan, str | None]:
    """The request continued after its finished replays: per partition from the highest end
    offset they reached (a partition none of them had: where ``plan`` starts) to the request's
    end; the newest finished replay when nothing lies after them."""
    ends: dict[int, int] = {}
    for _r, p in finished:
        for pp in p.partitions:
            ends[pp.partition] = max(ends.get(pp.partition, pp.end_offset), pp.end_offset)
    starts = {pp.partition: ends.get(pp.partition, pp.start_offset) for pp in plan.partitions}
    newest_run, newest = finished[-1]
    if all(starts[pp.partition] >= pp.end_offset for pp in plan.partitions):
        return newest, (
            f"this request was replayed by {newest_run.replay_id} ({newest_run.status}); "
            "nothing was archived after its end"
        )
    spec = plan.spec.model_copy(
        update={"from_": Position(kind="offset", per_partition=starts), "force": False}
    )
    try:
        follow = replan(spec)
    except EmptyRangeError:
        return newest, None
    # the follow-on keeps the request's intent (its own `from` is derived, not asked for)
    follow = follow.model_copy(update={"intent_id": plan.intent_id or intent_id(plan.spec)})
    done = ", ".join(f"{p}: {o}" for p, o in sorted(ends.items()))
    return follow, (
        f"this request was replayed before ({', '.join(r.replay_id for r, _p in finished)}, up "
        f"to offsets {done}): replay {follow.replay_id} continues from there, so nothing "
        "already delivered is sent again (--force replays the whole range again)"
    )


def fence(plan: ReplayPlan) -> list[str]:
    """Fence every producer of ``plan``'s replay on its target: ``init_transactions`` with each
    partition's transactional id, which aborts what a killed run left open (read_committed
    consumers of the target move on at once instead of after ``transaction.timeout.ms``).
    Returns the fenced transactional ids.

    Raises:
        ReplayTargetError: the target did not answer (nothing is released).
    """
    from confluent_kafka import Producer

    from kafka_archive.kafka_protocol.config import librdkafka_config
    from kafka_archive.replay.execution import txn_calls
    from kafka_archive.replay.execution.engine import transactional_id
    from kafka_archive.replay.execution.progress import CLIENT_DEFAULTS

    fenced = []
    for pp in plan.partitions:
        tid = transactional_id(plan.txn_base, pp.partition)
        producer = Producer(
            librdkafka_config(
                {
                    **CLIENT_DEFAULTS,
                    **plan.spec.target.client_config(),
                    "transactional.id": tid,
                    "enable.idempotence": True,
                }
            )
        )
        try:
            txn_calls.init_transactions(producer, tid)
        finally:
            producer.flush(0)
        fenced.append(tid)
    return fenced


def _choices(ids: Sequence[str]) -> str:
    lines = [f"resume it: `{resume_command(i)}`, or abandon it: `{abandon_command(i)}`"
             for i in ids]  # fmt: skip
    return "; ".join(lines) + " (abandon fences its producers and releases its data to prune)"
