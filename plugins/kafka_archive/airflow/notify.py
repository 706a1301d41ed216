"""Airflow's side of notifications: a notifier for task failures and retries, and deadline
alerts on the archive and catalog DAGs (the wording and delivery are
:mod:`kafka_archive.services.notify`'s).

* :class:`KafkaArchiveNotifier` is an Airflow 3 notifier (``airflow.sdk.BaseNotifier``): given
  as ``on_failure_callback`` / ``on_retry_callback`` it sends one message naming the DAG, the
  task, the run, the try, the error's first line (redacted) and the link to the task's log.
* :func:`alerting_args` is what each DAG file adds to its ``default_args`` (one line).
* :func:`run_deadline` is the ``deadline=`` of a DAG: a ``DeadlineAlert`` measured from when
  the run was queued, with the duration of the ``archive_deadline`` / ``catalog_deadline``
  setting (read when the DAG file is parsed: environment or configuration file), or ``None``
  (no deadline) when the setting is unset. Its callback, :func:`deadline_missed`, runs in the
  triggerer and sends the same kind of message.

Where the webhook comes from: the ``notify_webhook`` setting, read when a message is sent
(environment, then Airflow Variable, then configuration file). Nothing here raises into Airflow:
a notification that cannot be sent is logged and the task's outcome stands.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseNotifier

from kafka_archive.services.notify import Event, Notification, deliver, one_line_error

if TYPE_CHECKING:
    from airflow.sdk.definitions.deadline import DeadlineAlert

__all__ = [
    "KafkaArchiveNotifier",
    "alerting_args",
    "deadline_missed",
    "notification_from_context",
    "run_deadline",
]

log = logging.getLogger("kafka_archive.notify")


def _webhook() -> str | None:
    """The ``notify_webhook`` setting now (Airflow Variables where they can be read; a
    settings error reads as no webhook, logged, since a notification must not fail)."""
    from kafka_archive.settings import airflow_variable_reader, load_settings

    try:
        return load_settings(variables=airflow_variable_reader()).notify_webhook
    except Exception as exc:  # see the docstring
        from kafka_archive.redact import redact_text

        log.warning("notify_webhook could not be read: %s", redact_text(exc))
        return None


def notification_from_context(event: Event, context: Mapping[str, Any]) -> Notification:
    """The facts of a task callback's ``context`` (task instance, run, exception)."""
    ti = context.get("ti") or context.get("task_instance")
    dag_run = context.get("dag_run")
    dag_id = getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", None) or "?"
    run_id = getattr(ti, "run_id", None) or getattr(dag_run, "run_id", None) or "?"
    task_id = getattr(ti, "task_id", None)
    map_index = getattr(ti, "map_index", None)
    if task_id and isinstance(map_index, int) and map_index >= 0:
        task_id = f"{task_id}[{map_index}]"
    try_number = getattr(ti, "try_number", None)
    try:
        url: str | None = getattr(ti, "log_url", None)
    except Exception:  # the link is a nicety; its configuration may be missing
        url = None
    return Notification(
        event=event,
        dag_id=str(dag_id),
        run_id=str(run_id),
        task_id=str(task_id) if task_id else None,
        try_number=try_number if isinstance(try_number, int) else None,
        error=one_line_error(context.get("exception")),
        url=url,
    )


class KafkaArchiveNotifier(BaseNotifier):
    """Sends one message per call: to the log, and to ``notify_webhook`` when set.

    ``event`` is ``"failure"`` or ``"retry"``; ``webhook`` overrides the setting (tests, or a
    DAG that reports elsewhere). Never raises (:func:`kafka_archive.services.notify.deliver`).
    """

    def __init__(self, event: Event = "failure", *, webhook: str | None = None) -> None:
        super().__init__()
        self.event: Event = event
        self.webhook = webhook

    def notify(self, context: Any) -> None:
        try:
            notification = notification_from_context(self.event, context)
        except Exception as exc:  # an odd context must not fail the task
            from kafka_archive.redact import redact_text

            log.warning("could not build a notification: %s", redact_text(exc))
            return
        deliver(notification, webhook=self.webhook or _webhook(), logger=log)


def alerting_args() -> dict[str, Any]:
    """The ``default_args`` entries every DAG of the platform carries: a notification for each
    failed task and each retry."""
    return {
        "on_failure_callback": [KafkaArchiveNotifier("failure")],
        "on_retry_callback": [KafkaArchiveNotifier("retry")],
    }


async def deadline_missed(context: Mapping[str, Any], **kwargs: Any) -> None:
    """Deadline callback (runs in the triggerer): a run of ``context['dag_run']`` is still not
    done at ``context['deadline']['deadline_time']``. Never raises."""
    try:
        run = context.get("dag_run") or {}
        deadline = context.get("deadline") or {}
        when = deadline.get("deadline_time")
        notification = Notification(
            event="deadline",
            dag_id=str(run.get("dag_id") or kwargs.get("dag_id") or "?"),
            run_id=str(run.get("dag_run_id") or run.get("run_id") or "?"),
            detail=f"the run was not done by {when} ({kwargs.get('interval', '?')} after "
            "it was queued)"
            if when
            else None,
            url=_run_url(run),
        )
    except Exception as exc:
        from kafka_archive.redact import redact_text

        log.warning("could not build a deadline notification: %s", redact_text(exc))
        return
    webhook = await asyncio.to_thread(_webhook)
    await asyncio.to_thread(deliver, notification, webhook=webhook, logger=log)


def _run_url(run: Mapping[str, Any]) -> str | None:
    """The run's page in Airflow's UI (``[api] base_url``), or ``None``."""
    from urllib.parse import quote

    dag_id, run_id = run.get("dag_id"), run.get("dag_run_id") or run.get("run_id")
    if not dag_id or not run_id:
        return None
    try:
        from airflow.configuration import conf

        base = str(conf.get("api", "base_url", fallback="http://localhost:8080/"))
    except Exception:
        return None
    return f"{base.rstrip('/')}/dags/{dag_id}/runs/{quote(str(run_id))}"


def run_deadline(setting: str) -> DeadlineAlert | None:
    """The ``deadline=`` of a DAG from the duration setting ``setting`` (``archive_deadline``
    or ``catalog_deadline``), measured from when the run was queued; ``None`` when unset.

    Read at parse time from the environment and the configuration file only (parsing touches
    no database). A bad value raises :class:`kafka_archive.services.notify.NotifyConfigError`,
    so the DAG shows an import error naming the setting instead of running without it."""
    from airflow.sdk.definitions.callback import AsyncCallback
    from airflow.sdk.definitions.deadline import DeadlineAlert, DeadlineReference

    from kafka_archive.services.notify import parse_deadline
    from kafka_archive.settings import load_settings

    interval: timedelta | None = parse_deadline(setting, getattr(load_settings(), setting))
    if interval is None:
        return None
    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=interval,
        callback=AsyncCallback(deadline_missed, kwargs={"interval": str(interval)}),
    )
