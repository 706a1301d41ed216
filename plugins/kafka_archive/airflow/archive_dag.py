"""What the ``kafka_archive_segments`` DAG file needs besides the task bodies: its parse-time
configuration, the Asset it updates, and the rules of its tasks (which failures are retried).

The DAG file only declares the DAG; every decision lives here (Airflow imported inside
functions, so this module imports without Airflow and the rules are unit-tested).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafka_archive.archive import ARCHIVE_SEGMENTS_ASSET_URI
from kafka_archive.archive.config import (
    CONFIG_VARIABLE,
    ArchiveConfig,
    load_config,
    parse_time_config,
    parse_time_schedule,
)
from kafka_archive.archive.report import SegmentOutcome

__all__ = [
    "ARCHIVE_SEGMENTS_ASSET_URI",
    "is_dry_run",
    "outcomes",
    "parse_time_config",
    "parse_time_schedule",
    "raise_if_failed",
    "task_config",
]


def task_config() -> ArchiveConfig:
    """The archive configuration as a running task reads it (the Airflow Variable
    ``kafka_archive_config``, else the file named by ``KAFKA_ARCHIVE_CONFIG``)."""
    from airflow.sdk import Variable

    return load_config(Variable.get(CONFIG_VARIABLE, default=None))


def is_dry_run(params: Mapping[str, Any] | None) -> bool:
    """The run's ``dry_run`` Param (off when the run has no Params)."""
    return bool((params or {}).get("dry_run"))


def failure_is_final(result: Mapping[str, Any]) -> bool:
    """Whether an archive task's failure is one retrying cannot fix: every failed segment was
    quarantined as corrupt and no other error occurred (corruption does not heal)."""
    return not result["errors"] and all(
        o["status"] in ("quarantined", "archived", "skipped", "planned") for o in result["outcomes"]
    )


def raise_if_failed(result: Mapping[str, Any]) -> None:
    """Fail an archive task whose ``archive_work`` result reports a failure; return otherwise.

    A final failure (:func:`failure_is_final`) fails the task for good
    (``AirflowFailException``); any other raises ``RuntimeError`` so that Airflow retries it.
    """
    if not result["failed"]:
        return
    if failure_is_final(result):
        from airflow.sdk.exceptions import AirflowFailException

        raise AirflowFailException(f"corrupt segment(s) quarantined: {result['summary']}")
    raise RuntimeError(f"archiving failed (will retry): {result['summary']}")


def outcomes(results: Iterable[Mapping[str, Any]]) -> list[SegmentOutcome]:
    """The segment outcomes of the archive tasks' XCom results."""
    return [SegmentOutcome.model_validate(o) for r in results for o in r.get("outcomes", [])]
