"""The chart's notification values (monitoring.notifications): the webhook URL reaches every
Airflow container only by secretKeyRef, the deadlines as the settings' environment variables
(values kafka-archive itself accepts), the webhook gets an egress rule where callbacks run, and
bad values are refused by Helm's schema validation."""

from __future__ import annotations

from typing import Any

import helm_python
import pytest
from kafka_archive.services.notify import parse_deadline
from kafka_archive.settings import load_settings

from tests.support.helm_chart import env_of, render, validate_k8s

NOTIFY_ENV = (
    "KAFKA_ARCHIVE_NOTIFY_WEBHOOK",
    "KAFKA_ARCHIVE_ARCHIVE_DEADLINE",
    "KAFKA_ARCHIVE_CATALOG_DEADLINE",
)
ON: dict[str, Any] = {
    "monitoring": {
        "notifications": {
            "webhook": {"existingSecret": "ops-webhook", "urlKey": "slack-url"},
            "archiveDeadline": "45m",
            "catalogDeadline": "3h",
        }
    }
}
#: where callbacks run (workers: task callbacks; triggerer: deadline callbacks) and where the
#: DAGs are parsed (dag-processor: the deadlines)
AIRFLOW_DEPLOYMENTS = ("worker", "triggerer", "dag-processor", "scheduler")


def _deployment_env(r: Any, component: str) -> dict[str, Any]:
    dep = r.get("Deployment", f"ka-kafka-archive-{component}")
    return env_of(dep["spec"]["template"]["spec"]["containers"][0])


def _egress(values: dict[str, Any] | None, component: str) -> list[Any]:
    policy = render(values).get("NetworkPolicy", f"ka-kafka-archive-{component}")
    rules: list[Any] = policy["spec"]["egress"]
    return rules


def test_by_default_there_is_no_webhook_and_no_deadline() -> None:
    r = render()
    for component in AIRFLOW_DEPLOYMENTS:
        env = _deployment_env(r, component)
        assert not set(NOTIFY_ENV) & set(env), component


def test_the_webhook_comes_from_its_secret_and_the_deadlines_as_settings() -> None:
    r = render(ON)
    for obj in r.objects:
        validate_k8s(obj)
    for component in AIRFLOW_DEPLOYMENTS:
        env = _deployment_env(r, component)
        webhook = env["KAFKA_ARCHIVE_NOTIFY_WEBHOOK"]
        assert "value" not in webhook
        assert webhook["valueFrom"] == {
            "secretKeyRef": {"name": "ops-webhook", "key": "slack-url"}
        }, component
        assert env["KAFKA_ARCHIVE_ARCHIVE_DEADLINE"]["value"] == "45m"
        assert env["KAFKA_ARCHIVE_CATALOG_DEADLINE"]["value"] == "3h"
        # what the chart passes is what the platform reads
        settings = load_settings(
            env={k: v["value"] for k, v in env.items() if k in NOTIFY_ENV and "value" in v}
        )
        assert parse_deadline("archive_deadline", settings.archive_deadline) is not None
        assert parse_deadline("catalog_deadline", settings.catalog_deadline) is not None


def test_the_webhook_gets_egress_where_callbacks_run_only_when_configured() -> None:
    rule = {"ports": [{"port": 443, "protocol": "TCP"}]}
    for component in ("worker", "archiver", "triggerer"):
        before, after = _egress(None, component), _egress(ON, component)
        # one rule more, that rule (the object store may have the same port already)
        assert len(after) == len(before) + 1, component
        assert after.count(rule) == before.count(rule) + 1, component
        assert all(r in after for r in before), component
    narrowed = {
        **ON,
        "networkPolicies": {"webhook": {"to": [{"ipBlock": {"cidr": "203.0.113.0/24"}}]}},
    }
    assert {**rule, "to": [{"ipBlock": {"cidr": "203.0.113.0/24"}}]} in _egress(
        narrowed, "triggerer"
    )


@pytest.mark.parametrize(
    ("values", "pointer"),
    [
        (
            {"monitoring": {"notifications": {"archiveDeadline": "tomorrow"}}},
            "/monitoring/notifications/archiveDeadline",
        ),
        (
            {"monitoring": {"notifications": {"webhook": {"url": "https://hooks.example/T/B/x"}}}},
            "/monitoring/notifications/webhook",
        ),
    ],
    ids=["deadline not a duration", "webhook URL inline"],
)
def test_bad_notification_values_are_refused(values: dict[str, Any], pointer: str) -> None:
    with pytest.raises(helm_python.HelmValuesError) as raised:
        render(values)
    assert f"at '{pointer}" in str(raised.value)
