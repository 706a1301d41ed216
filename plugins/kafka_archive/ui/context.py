"""What the route modules share: settings, Airflow's side, and the access checks."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from kafka_archive.settings import Settings
from kafka_archive.timeparse import MAX_MS, resolve_time
from kafka_archive.ui.access import Principal
from kafka_archive.ui.launcher import Launcher

__all__ = ["MAX_MS", "ApiContext", "resolve_time"]


@dataclass(frozen=True)
class ApiContext:
    settings: Callable[[], Settings]
    launcher: Launcher
    reader: Callable[..., Awaitable[Principal]]
    #: may trigger :data:`~kafka_archive.ui.access.REPLAY_DAG_ID` (launch a replay)
    trigger: Callable[..., Awaitable[Principal]]
    #: may trigger :data:`~kafka_archive.ui.access.GROUP_OFFSETS_DAG_ID` (move a group)
    group_trigger: Callable[..., Awaitable[Principal]]
    #: may trigger :data:`~kafka_archive.ui.access.RESTORE_DAG_ID` (plan or launch a restore)
    restore_trigger: Callable[..., Awaitable[Principal]] | None = None
