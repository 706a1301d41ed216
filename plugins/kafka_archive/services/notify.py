"""Notifications: one message per failed or retried task and per missed deadline.

The Airflow side (:mod:`kafka_archive.airflow.notify`) turns a callback's context into a
:class:`Notification`; this module words it and delivers it, without Airflow:

* **the log**, always: one WARNING record on the ``kafka_archive.notify`` logger (in a task
  callback that is the task's log; in a deadline callback, the triggerer's);
* **a webhook**, when the ``notify_webhook`` setting names one: a JSON POST whose ``text`` field
  is the message (what Slack's and Mattermost's incoming webhooks read; Teams workflows and most
  chat bridges accept it too), the other fields the same facts one by one.

Contract: :func:`deliver` never raises. A webhook that is down, slow (bounded by ``timeout``),
refuses or answers non-2xx is logged, redacted, and the task's own outcome stands: a
notification must never turn a retry into a failure. No secret reaches the message: the error
line goes through :func:`kafka_archive.redact.redact_text`, and the webhook URL (its path is the
token in Slack's scheme) is registered as a secret and never logged, only its host.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Literal
from urllib.parse import urlsplit

from kafka_archive.errors import KafkaArchiveError
from kafka_archive.redact import redact_text, register_secret

__all__ = [
    "ERROR_MAX_CHARS",
    "Event",
    "Notification",
    "NotifyConfigError",
    "deliver",
    "one_line_error",
    "parse_deadline",
]

Event = Literal["failure", "retry", "deadline"]
#: the error line of a message is cut here: a notification names the error, the log holds it
ERROR_MAX_CHARS = 300
log = logging.getLogger("kafka_archive.notify")

_HEADLINE: dict[str, str] = {
    "failure": "FAILED",
    "retry": "up for retry",
    "deadline": "missed its deadline",
}


class NotifyConfigError(KafkaArchiveError, ValueError):
    """A notification setting has a value it cannot take (message names it, hint says what)."""

    exit_code = 2


@dataclass(frozen=True, slots=True)
class Notification:
    """What happened, to whom: the facts of one message (no secret: ``error`` is redacted by
    whoever builds it through :func:`one_line_error`)."""

    event: Event
    dag_id: str
    run_id: str
    task_id: str | None = None
    try_number: int | None = None
    error: str | None = None
    url: str | None = None
    #: e.g. the deadline's time for a missed deadline
    detail: str | None = None

    def text(self) -> str:
        """The message: one headline line, then the error and the link when known."""
        what = f"{self.dag_id}.{self.task_id}" if self.task_id else self.dag_id
        head = f"kafka-archive: {what} {_HEADLINE[self.event]}"
        head += f" (run {self.run_id}"
        head += f", try {self.try_number})" if self.try_number is not None else ")"
        lines = [head]
        if self.detail:
            lines.append(self.detail)
        if self.error:
            lines.append(f"error: {self.error}")
        if self.url:
            lines.append(self.url)
        return "\n".join(lines)

    def payload(self) -> dict[str, object]:
        """The webhook's JSON body: ``text`` (Slack-compatible) and every fact by name."""
        return {"text": self.text(), **asdict(self)}


def one_line_error(error: BaseException | str | None) -> str | None:
    """The error's type and the first non-empty line of its message, redacted, at most
    :data:`ERROR_MAX_CHARS` characters (``None`` for no error)."""
    if error is None:
        return None
    if isinstance(error, BaseException):
        first = next((ln.strip() for ln in str(error).splitlines() if ln.strip()), "")
        text = f"{type(error).__name__}: {first}" if first else type(error).__name__
    else:
        text = next((ln.strip() for ln in error.splitlines() if ln.strip()), "")
    text = redact_text(text)
    if len(text) > ERROR_MAX_CHARS:
        text = text[: ERROR_MAX_CHARS - 3] + "..."
    return text or None


def _webhook_host(url: str) -> str:
    try:
        parts = urlsplit(url)
        return f"{parts.scheme}://{parts.hostname or '?'}"
    except ValueError:
        return "<unparsable webhook URL>"


def deliver(
    notification: Notification,
    *,
    webhook: str | None,
    timeout: float = 10.0,
    logger: logging.Logger | None = None,
) -> bool:
    """Log ``notification`` and POST it to ``webhook`` when given; never raises.

    Returns whether every configured channel took it (``False``: the webhook failed; that is
    logged, with the webhook's host only, and redacted)."""
    out = logger or log
    try:
        out.warning("%s", redact_text(notification.text()))
    except Exception:  # a broken log handler must not fail the task either
        pass
    if not webhook:
        return True
    register_secret(webhook)  # its path is a token: hidden wherever it would appear
    host = _webhook_host(webhook)
    try:
        body = json.dumps(notification.payload()).encode()
        request = urllib.request.Request(  # the scheme is checked just below
            webhook,
            data=body,
            headers={"Content-Type": "application/json", "User-Agent": "kafka-archive-notify"},
            method="POST",
        )
        if urlsplit(webhook).scheme not in ("http", "https"):
            raise ValueError("the webhook URL must be http:// or https://")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read(1024)
        return True
    except Exception as exc:  # the contract: a notification never fails a task
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if isinstance(exc, urllib.error.HTTPError):
            reason = f"HTTP {exc.code}"
        try:
            out.warning(
                "notification webhook at %s failed (the task's outcome is unchanged): %s",
                host,
                redact_text(f"{type(exc).__name__}: {reason}"),
            )
        except Exception:
            pass
        return False


def parse_deadline(name: str, value: str | None) -> timedelta | None:
    """A deadline setting's duration (``30m``, ``2h``, ``1d``); ``None`` when unset.

    Raises :class:`NotifyConfigError` for a value that is not a positive duration."""
    if value is None or not str(value).strip():
        return None
    from kafka_archive.catalog.retention import parse_duration_ms

    try:
        return timedelta(milliseconds=parse_duration_ms(str(value).strip()))
    except ValueError as exc:
        raise NotifyConfigError(
            f"{name}: {exc}",
            hint=f"set {name} to a duration such as 45m, 2h or 1d, or leave it empty "
            "for no deadline",
        ) from None
