"""The restore record read back: every restore's status (with its topics' replays), and the
stored request of one to resume (the catalog never stores secrets: they are given again).

Errors: :class:`~kafka_archive.replay.errors.ReplayConfigError` (an unknown restore, several
unfinished ones when none is named, secrets missing).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from kafka_archive.restore.request import RestoreRequest
from kafka_archive.timeparse import format_ms

if TYPE_CHECKING:
    from kafka_archive.replay.bookkeeping.ledger import ReplayLedger
    from kafka_archive.replay.bookkeeping.restores import RestoreLedger

__all__ = ["status_rows", "stored_request"]


def status_rows(
    ledger: RestoreLedger, replays_ledger: ReplayLedger, restore_id: str | None = None
) -> list[dict[str, Any]]:
    """Restores with each topic's replay status, newest first (``running`` with no live
    replay is ``interrupted``), each with its resume command.

    Raises:
        ReplayConfigError: ``restore_id`` is given and unknown.
    """
    from kafka_archive.replay.bookkeeping.lease import run_alive
    from kafka_archive.replay.errors import ReplayConfigError

    rows = ledger.runs()
    if restore_id is not None:
        rows = [r for r in rows if r.restore_id == restore_id]
        if not rows:
            raise ReplayConfigError(
                f"no restore {restore_id!r} in the catalog",
                hint="see `kafka-archive restore status`",
            )
    out = []
    for row in rows:
        replays: dict[str, str] = json.loads(row.replays_json)
        topics = {}
        for topic, rid in sorted(replays.items()):
            found = replays_ledger.run(rid)
            topics[topic] = {"replay_id": rid, "status": found.status if found else "planned"}
        status = row.status
        engine = replays_ledger.engine
        if status == "running" and not any(run_alive(engine, r) for r in replays.values()):
            status = "interrupted"
        out.append(
            {
                "restore_id": row.restore_id,
                "status": status,
                "cluster": row.cluster,
                "target": row.target,
                "at_ms": row.at_ms,
                "at": format_ms(row.at_ms),
                "created_at_ms": row.created_at_ms,
                "finished_at_ms": row.finished_at_ms,
                "error": row.error,
                "topics": topics,
                "resume": None
                if status.startswith("complete")
                else f"kafka-archive restore resume {row.restore_id}",
                "report": json.loads(row.report_json) if row.report_json else None,
            }
        )
    return out


def stored_request(
    ledger: RestoreLedger, restore_id: str | None, *, target_config: dict[str, str] | None = None
) -> RestoreRequest:
    """The request of ``restore_id`` (``None``: the only unfinished restore), with the
    target settings given again (the catalog never stores secrets).

    Raises:
        ReplayConfigError: no such restore, several unfinished, or secrets are missing.
    """
    from kafka_archive.replay.errors import ReplayConfigError

    if restore_id is None:
        rows = ledger.unfinished()
        if len(rows) != 1:
            ids = ", ".join(r.restore_id for r in rows) or "none"
            raise ReplayConfigError(
                f"{len(rows)} unfinished restores ({ids})",
                hint="name the one to resume: `kafka-archive restore resume RESTORE_ID`",
            )
        row = rows[0]
    else:
        found = ledger.get(restore_id)
        if found is None:
            raise ReplayConfigError(
                f"no restore {restore_id!r} in the catalog",
                hint="see `kafka-archive restore status`",
            )
        row = found
    request = RestoreRequest.model_validate_json(row.request_json)
    target = request.target.with_config(dict(target_config or {}))
    if any(v == "***" for v in target.config.values()):
        raise ReplayConfigError(
            "the target needs secret settings the catalog does not store",
            hint="give them again with --target-config NAME=VALUE",
            missing="target secrets",
        )
    return request.model_copy(update={"target": target})
