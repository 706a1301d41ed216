"""The catalog side of one replay run, the same wherever the partitions run.

:func:`replay_run` wraps a run (threads in this process, or Spark tasks driven from here): it
holds the replay's lease for the whole run (one live run per replay id, see :mod:`.lease`),
registers the plan and marks it ``running``, and records how the run ended: ``failed`` with
the error, ``incomplete`` when the run said so (``outcome.status``: it stopped at the archive's
last stable offset, :mod:`.stability`), else ``complete`` / ``complete-with-gaps``
(:func:`.completeness.final_status`).
Without a ledger (no catalog: tests, ad-hoc runs) it does nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kafka_archive.replay.bookkeeping.lease import ReplayLease
from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
from kafka_archive.replay.planning.completeness import final_status
from kafka_archive.replay.planning.plan import ReplayPlan
from kafka_archive.replay.planning.stability import INCOMPLETE

__all__ = ["RunOutcome", "replay_run"]

#: the longest error text kept in ``replay_runs.error``
_MAX_ERROR = 2000


@dataclass(slots=True)
class RunOutcome:
    """What the wrapped run reports back: its final status (``None``: finished as planned)."""

    status: str | None = None


@contextmanager
def replay_run(plan: ReplayPlan, ledger: ReplayLedger | None) -> Iterator[RunOutcome]:
    """Hold the lease of ``plan``'s replay and keep its status in ``ledger`` around the run;
    the run sets ``outcome.status`` to ``incomplete`` when it stopped at the archive's last
    stable offset.

    Raises:
        ReplayBusyError: another live run holds this replay (nothing is changed).
    """
    outcome = RunOutcome()
    if ledger is None:
        yield outcome
        return
    with ReplayLease(ledger.engine, plan.replay_id):
        ledger.register(plan)
        ledger.set_status(plan.replay_id, "running")
        try:
            yield outcome
        except BaseException as exc:
            ledger.set_status(plan.replay_id, "failed", error=str(exc)[:_MAX_ERROR])
            raise
        if outcome.status == INCOMPLETE:
            ledger.set_status(plan.replay_id, INCOMPLETE)
        else:
            ledger.set_status(plan.replay_id, final_status(plan.has_holes))
