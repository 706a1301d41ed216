"""The catalog's record of whole-cluster restores (table ``restore_runs``).

A restore is one resumable unit made of replays, one per topic; each replay keeps its own
progress and exactly-once bookkeeping (:mod:`.ledger`). This record holds what binds them: the
request as given (secrets redacted: the catalog never stores them), the moment, and the replay id
each topic was given, so that ``restore resume`` (or the same ``restore run`` again) finds the
unfinished restore and continues each replay where it stopped. Its status and last report are
for ``restore status`` and the on-call page.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from kafka_archive.replay.bookkeeping.models import RestoreRunRow
from kafka_archive.timeparse import now_ms

__all__ = ["FINISHED_RESTORE_STATUSES", "RestoreLedger"]

#: statuses of restores that are over: a new run of their request plans nothing more
FINISHED_RESTORE_STATUSES = frozenset({"complete", "complete-with-gaps", "abandoned"})
#: the longest error text kept
_MAX_ERROR = 4000


class RestoreLedger:
    """Restore records in the catalog database (``engine``: the catalog's engine, migrated)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._sessions = sessionmaker(engine, expire_on_commit=False)

    def _session(self) -> Session:
        return self._sessions()

    def register(
        self, restore_id: str, *, cluster: str, target: str, at_ms: int, request_json: str
    ) -> RestoreRunRow:
        """Record a restore once (a known id keeps its row) and return it."""
        with self._session() as s, s.begin():
            row = s.get(RestoreRunRow, restore_id)
            if row is None:
                now = now_ms()
                row = RestoreRunRow(
                    restore_id=restore_id,
                    cluster=cluster,
                    target=target,
                    at_ms=at_ms,
                    status="planned",
                    request_json=request_json,
                    replays_json="{}",
                    report_json=None,
                    created_at_ms=now,
                    updated_at_ms=now,
                    finished_at_ms=None,
                    error=None,
                )
                s.add(row)
            return row

    def set_replays(self, restore_id: str, replays: Mapping[str, str]) -> None:
        """Record ``{source topic: replay id}`` (merged with what is recorded)."""
        with self._session() as s, s.begin():
            row = s.get(RestoreRunRow, restore_id)
            if row is None:
                raise KeyError(restore_id)
            known = json.loads(row.replays_json)
            known.update(replays)
            row.replays_json = json.dumps(known, sort_keys=True)
            row.updated_at_ms = now_ms()

    def set_status(
        self,
        restore_id: str,
        status: str,
        *,
        error: str | None = None,
        report_json: str | None = None,
    ) -> None:
        """Set the status (and error, and the last report when given); a finished status
        stamps ``finished_at_ms``."""
        with self._session() as s, s.begin():
            row = s.get(RestoreRunRow, restore_id)
            if row is None:
                raise KeyError(restore_id)
            now = now_ms()
            row.status = status
            row.error = error[:_MAX_ERROR] if error else None
            if report_json is not None:
                row.report_json = report_json
            row.updated_at_ms = now
            row.finished_at_ms = now if status in FINISHED_RESTORE_STATUSES else None

    def get(self, restore_id: str) -> RestoreRunRow | None:
        with self._session() as s:
            return s.get(RestoreRunRow, restore_id)

    def runs(self, *, cluster: str | None = None) -> list[RestoreRunRow]:
        """Every restore (of ``cluster``), newest first."""
        q = select(RestoreRunRow).order_by(RestoreRunRow.created_at_ms.desc())
        if cluster is not None:
            q = q.where(RestoreRunRow.cluster == cluster)
        with self._session() as s:
            return list(s.scalars(q))

    def unfinished(self) -> list[RestoreRunRow]:
        """The restores not over yet, newest first."""
        return [r for r in self.runs() if r.status not in FINISHED_RESTORE_STATUSES]
