"""Notifications (kafka_archive.services.notify, kafka_archive.airflow.notify): the message
names DAG, task, run, try, the error's first line (redacted) and the link; a real local HTTP
server receives the webhook's POST; a webhook that fails never raises; deadline alerts follow
the settings.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from kafka_archive.redact import register_secret
from kafka_archive.services.notify import (
    ERROR_MAX_CHARS,
    Notification,
    NotifyConfigError,
    deliver,
    one_line_error,
    parse_deadline,
)
from kafka_archive.settings import load_settings
from support.webhook import Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


def _failure() -> Notification:
    return Notification(
        event="failure",
        dag_id="kafka_archive_catalog",
        run_id="scheduled__2026-11-27T21:00:00+00:00",
        task_id="build_local",
        try_number=3,
        error="CatalogError: database is locked",
        url="http://airflow:8080/dags/kafka_archive_catalog/runs/x/tasks/build_local?try_number=3",
    )


def test_the_message_names_dag_task_run_try_error_and_link() -> None:
    text = _failure().text()
    first = text.splitlines()[0]
    assert first == (
        "kafka-archive: kafka_archive_catalog.build_local FAILED "
        "(run scheduled__2026-11-27T21:00:00+00:00, try 3)"
    )
    assert "error: CatalogError: database is locked" in text
    assert text.splitlines()[-1].startswith("http://airflow:8080/dags/kafka_archive_catalog/")
    retry = Notification(event="retry", dag_id="d", run_id="r", task_id="t", try_number=1)
    assert retry.text() == "kafka-archive: d.t up for retry (run r, try 1)"
    late = Notification(event="deadline", dag_id="d", run_id="r", detail="not done by X")
    assert late.text() == "kafka-archive: d missed its deadline (run r)\nnot done by X"


def test_the_error_line_is_the_first_line_redacted_and_bounded() -> None:
    register_secret("registered-s3cr3t-value")
    exc = RuntimeError(
        "\ncannot reach postgresql://catalog:hunter22@db:5432/cat with registered-s3cr3t-value"
        "\nTraceback (most recent call last): secret details"
    )
    line = one_line_error(exc)
    assert line is not None
    assert line.startswith("RuntimeError: cannot reach postgresql://catalog:")
    assert "hunter22" not in line and "registered-s3cr3t-value" not in line
    assert "Traceback" not in line
    assert one_line_error("token=abcd1234efgh rest") == "token=*** rest"
    assert one_line_error(ValueError()) == "ValueError"
    assert one_line_error(None) is None
    long = one_line_error("x" * 1000)
    assert long is not None and len(long) == ERROR_MAX_CHARS and long.endswith("...")


def test_the_webhook_receives_one_json_post_with_a_slack_text(receiver: Receiver) -> None:
    assert deliver(_failure(), webhook=receiver.url()) is True
    assert len(receiver.posts) == 1
    post = receiver.posts[0]
    assert post["path"] == "/services/T000/B000/tok3nSecretPath"
    assert post["content_type"] == "application/json"
    body = post["json"]
    assert body["text"] == _failure().text()
    assert body["event"] == "failure"
    assert (body["dag_id"], body["task_id"], body["try_number"]) == (
        "kafka_archive_catalog",
        "build_local",
        3,
    )


def test_a_failing_webhook_never_raises_and_its_token_is_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refusing = Receiver(status=500)
    try:
        caplog.set_level(logging.WARNING, logger="kafka_archive.notify")
        assert deliver(_failure(), webhook=refusing.url()) is False
        assert len(refusing.posts) == 1
        port = refusing.server.server_address[1]
    finally:
        refusing.close()
    # nothing listens there any more: connection refused, also not raised
    assert deliver(_failure(), webhook=f"http://127.0.0.1:{port}/hook/tok3nSecretPath") is False
    assert deliver(_failure(), webhook="ftp://example.invalid/tok3nSecretPath") is False
    assert deliver(_failure(), webhook="http://[not a host/tok3nSecretPath") is False
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "HTTP 500" in logged
    assert "webhook at http://127.0.0.1 failed" in logged
    assert "tok3nSecretPath" not in logged
    # the message itself was logged each time
    assert logged.count("kafka_archive_catalog.build_local FAILED") == 4


def _context(exc: BaseException) -> dict[str, Any]:
    ti = SimpleNamespace(
        dag_id="kafka_archive_segments",
        task_id="archive__default",
        run_id="manual__1",
        map_index=2,
        try_number=1,
        log_url="http://airflow/dags/kafka_archive_segments/runs/manual__1/tasks/archive",
    )
    return {"ti": ti, "exception": exc}


def test_the_notifier_posts_the_task_facts_with_the_error_redacted(receiver: Receiver) -> None:
    from kafka_archive.airflow.notify import KafkaArchiveNotifier, alerting_args

    notifier = KafkaArchiveNotifier("retry", webhook=receiver.url())
    notifier(_context(OSError("s3 said: aws_secret_access_key=AKIAzzzSECRET denied")))
    body = receiver.posts[0]["json"]
    assert body["event"] == "retry"
    assert body["task_id"] == "archive__default[2]"
    assert (body["dag_id"], body["run_id"], body["try_number"]) == (
        "kafka_archive_segments",
        "manual__1",
        1,
    )
    assert body["error"] == "OSError: s3 said: aws_secret_access_key=*** denied"
    assert "AKIAzzzSECRET" not in json.dumps(body)
    assert body["url"].startswith("http://airflow/dags/kafka_archive_segments/")
    args = alerting_args()
    assert [type(c).__name__ for c in args["on_failure_callback"]] == ["KafkaArchiveNotifier"]
    assert args["on_failure_callback"][0].event == "failure"
    assert args["on_retry_callback"][0].event == "retry"


def test_the_notifier_reads_the_webhook_setting_and_an_odd_context_does_not_raise(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kafka_archive.airflow.notify import KafkaArchiveNotifier

    monkeypatch.setenv("KAFKA_ARCHIVE_NOTIFY_WEBHOOK", receiver.url("/from-setting"))
    KafkaArchiveNotifier("failure").notify({"exception": RuntimeError("boom")})
    KafkaArchiveNotifier("failure").notify({"ti": object()})
    assert [p["path"] for p in receiver.posts] == ["/from-setting", "/from-setting"]
    assert receiver.posts[0]["json"]["error"] == "RuntimeError: boom"


def test_a_missed_deadline_is_posted(receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_archive.airflow.notify import deadline_missed

    monkeypatch.setenv("KAFKA_ARCHIVE_NOTIFY_WEBHOOK", receiver.url())
    context = {
        "dag_run": {"dag_id": "kafka_archive_catalog", "dag_run_id": "asset_triggered__9"},
        "deadline": {"id": "d1", "deadline_time": "2026-11-27T23:00:00+00:00"},
    }
    asyncio.run(deadline_missed(context, interval="2:00:00"))
    body = receiver.posts[0]["json"]
    assert body["event"] == "deadline"
    assert (body["dag_id"], body["run_id"], body["task_id"]) == (
        "kafka_archive_catalog",
        "asset_triggered__9",
        None,
    )
    assert "not done by 2026-11-27T23:00:00+00:00 (2:00:00 after it was queued)" in body["text"]
    assert body["url"].endswith("/dags/kafka_archive_catalog/runs/asset_triggered__9")
    asyncio.run(deadline_missed({"dag_run": None}))  # odd context: logged, not raised
    assert len(receiver.posts) == 2


def test_deadlines_come_from_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.sdk.definitions.deadline import DeadlineReference
    from kafka_archive.airflow.notify import run_deadline

    monkeypatch.delenv("KAFKA_ARCHIVE_ARCHIVE_DEADLINE", raising=False)
    monkeypatch.delenv("KAFKA_ARCHIVE_CONFIG", raising=False)
    assert run_deadline("archive_deadline") is None
    monkeypatch.setenv("KAFKA_ARCHIVE_ARCHIVE_DEADLINE", "45m")
    alert = run_deadline("archive_deadline")
    assert alert is not None
    assert alert.interval == timedelta(minutes=45)
    assert alert.reference == DeadlineReference.DAGRUN_QUEUED_AT
    assert alert.callback.path == "kafka_archive.airflow.notify.deadline_missed"
    monkeypatch.setenv("KAFKA_ARCHIVE_ARCHIVE_DEADLINE", "soon")
    with pytest.raises(NotifyConfigError) as err:
        run_deadline("archive_deadline")
    assert "archive_deadline" in str(err.value) and "45m" in err.value.hint
    assert parse_deadline("catalog_deadline", "2h") == timedelta(hours=2)
    assert parse_deadline("catalog_deadline", "  ") is None
    with pytest.raises(NotifyConfigError):
        parse_deadline("catalog_deadline", "0m")


def test_the_webhook_setting_is_a_secret_shown_as_its_host_only() -> None:
    url = "https://hooks.slack.com/services/T000/B000/XXXXtokenXXXX"
    settings = load_settings(env={"KAFKA_ARCHIVE_NOTIFY_WEBHOOK": url})
    rows = {r["name"]: r for r in settings.describe()}
    assert rows["notify_webhook"]["value"] == "https://hooks.slack.com/***"
    assert rows["notify_webhook"]["source"] == "environment"
    db = "postgresql://catalog:pw1234@db/cat"
    rows = {r["name"]: r for r in load_settings(env={"KAFKA_ARCHIVE_DB": db}).describe()}
    assert "pw1234" not in rows["db"]["value"]
