"""The chart's monitoring (helm/kafka-archive/templates/monitoring): the PrometheusRule
rendered by Helm passes ``promtool check rules`` and each alert fires exactly when it should
(``promtool test rules``, one scenario that fires and one that must not per alert); thresholds
come from values; the Grafana dashboard is well formed and queries only metrics the code
exposes (:mod:`kafka_archive.metrics.definitions`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka_archive.metrics.definitions import names

from tests.support.helm_chart import CHART_DIR, render, validate_k8s
from tests.support.prometheus import promtool

ON = {"monitoring": {"prometheusRule": {"enabled": True}, "dashboard": {"enabled": True}}}
METRIC = re.compile(r"\bkafka_archive_[a-z0-9_]+\b")


def _rules(values: dict[str, Any] | None = None) -> dict[str, Any]:
    r = render(values or ON)
    [rule] = r.of_kind("PrometheusRule")
    spec: dict[str, Any] = rule["spec"]
    return spec


def _write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_monitoring_is_off_by_default_and_renders_valid_objects_when_on() -> None:
    assert not render().of_kind("PrometheusRule")
    r = render(ON)
    [cm] = [o for o in r.of_kind("ConfigMap") if o["metadata"]["name"].endswith("-dashboard")]
    validate_k8s(cm)
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    [rule] = r.of_kind("PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"


def test_rendered_rules_pass_promtool_check(tmp_path: Path) -> None:
    path = _write(tmp_path / "rules.yaml", _rules())
    proc = promtool("check", "rules", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 9 rules found" in proc.stdout


def test_every_rule_names_only_metrics_the_code_exposes() -> None:
    known = names()
    for rule in _rules()["groups"][0]["rules"]:
        used = set(METRIC.findall(rule["expr"]))
        assert used, rule["alert"]
        assert used <= known, (rule["alert"], used - known)


def test_thresholds_and_alert_labels_come_from_values() -> None:
    values = {
        "monitoring": {
            "prometheusRule": {"enabled": True, "labels": {"release": "prom"}},
            "dashboard": {"enabled": False},
            "alerts": {"archiveLagSeconds": 123, "for": "3m", "labels": {"team": "data"}},
        }
    }
    r = render(values)
    [rule] = r.of_kind("PrometheusRule")
    assert rule["metadata"]["labels"]["release"] == "prom"
    behind = next(
        x for x in rule["spec"]["groups"][0]["rules"] if x["alert"] == "KafkaArchiveBehind"
    )
    assert behind["expr"] == "kafka_archive_partition_lag_seconds > 123"
    assert behind["for"] == "3m"
    assert behind["labels"] == {"severity": "critical", "team": "data"}


# --- promtool test rules: for each alert, a series that fires it and one that must not.
# time() in promtool starts at 0, so a "..._timestamp_seconds" series of 0 is as old as the
# evaluation time. Scenarios are evaluated at 8h (thresholds: values.yaml defaults).

_H8 = 8 * 60  # samples of a 1m interval in 8h
_C = '{cluster="c"}'
_STILL = f"0x{_H8}"  # a timestamp that never moves: as old as the evaluation time
_MOVING = f"0+60x{_H8}"  # a timestamp that keeps up with the clock


def _s(series: str, values: str) -> dict[str, str]:
    return {"series": series, "values": values}


def _n(value: int) -> str:
    return f"{value}x{_H8}"


_LAG = 'kafka_archive_partition_lag_seconds{cluster="c",topic="t",partition="0"}'
_ARCH = 'kafka_archive_archive_last_success_timestamp_seconds{cluster="c",broker="1"}'
_BUILD_OK = "kafka_archive_catalog_build_last_success_timestamp_seconds"
_BUILD_BAD = "kafka_archive_catalog_build_last_failure_timestamp_seconds"
_F_LAG = "kafka_archive_follower_lag_offsets" + _C
_F_TS = "kafka_archive_follower_last_progress_timestamp_seconds" + _C
_INTEGRITY = 'kafka_archive_integrity_problems{kind="corrupt"}'
_PRUNE_N = "kafka_archive_prune_unfinished_ranges" + _C
_PRUNE_TS = "kafka_archive_prune_oldest_unfinished_timestamp_seconds" + _C
_REPLAY = (
    'kafka_archive_replay_last_progress_timestamp_seconds{replay_id="r1",cluster="c",topic="t"}'
)

SCENARIOS: list[tuple[str, list[dict[str, str]], dict[str, str] | None]] = [
    # (alert, input series, labels of the expected alert or None: must stay silent)
    ("KafkaArchiveMetricsDown", [_s("kafka_archive_catalog_up", _n(0))], {"severity": "critical"}),
    ("KafkaArchiveMetricsDown", [_s("kafka_archive_catalog_up", _n(1))], None),
    ("KafkaArchiveBehind", [_s(_LAG, _n(7200))],
     {"severity": "critical", "cluster": "c", "topic": "t", "partition": "0"}),
    ("KafkaArchiveBehind", [_s(_LAG, _n(600))], None),
    ("KafkaArchiveNotArchiving", [_s(_ARCH, _STILL)],
     {"severity": "warning", "cluster": "c", "broker": "1"}),
    ("KafkaArchiveNotArchiving", [_s(_ARCH, _MOVING)], None),
    ("KafkaArchiveCatalogStale", [_s(_BUILD_OK, _STILL)], {"severity": "warning"}),
    ("KafkaArchiveCatalogStale", [_s(_BUILD_OK, _MOVING)], None),
    ("KafkaArchiveCatalogBuildFailing", [_s(_BUILD_OK, _n(100)), _s(_BUILD_BAD, _n(200))],
     {"severity": "warning"}),
    ("KafkaArchiveCatalogBuildFailing", [_s(_BUILD_OK, _n(300)), _s(_BUILD_BAD, _n(200))], None),
    # never succeeded, failed once
    ("KafkaArchiveCatalogBuildFailing", [_s(_BUILD_BAD, _n(200))], {"severity": "warning"}),
    ("KafkaArchiveFollowerStopped", [_s(_F_LAG, _n(50000)), _s(_F_TS, _STILL)],
     {"severity": "critical", "cluster": "c"}),
    # far behind but storing: catching up, not stopped
    ("KafkaArchiveFollowerStopped", [_s(_F_LAG, _n(50000)), _s(_F_TS, _MOVING)], None),
    # an idle cluster: nothing to store, nothing behind
    ("KafkaArchiveFollowerStopped", [_s(_F_LAG, _n(0)), _s(_F_TS, _STILL)], None),
    ("KafkaArchiveIntegrityProblem", [_s(_INTEGRITY, f"0x{_H8 - 1} 1")],
     {"severity": "critical", "kind": "corrupt"}),
    ("KafkaArchiveIntegrityProblem", [_s(_INTEGRITY, _n(0))], None),
    ("KafkaArchivePruneFailed", [_s(_PRUNE_N, _n(2)), _s(_PRUNE_TS, _STILL)],
     {"severity": "warning", "cluster": "c"}),
    # a prune at work right now
    ("KafkaArchivePruneFailed", [_s(_PRUNE_N, _n(2)), _s(_PRUNE_TS, _MOVING)], None),
    ("KafkaArchiveReplayStalled", [_s(_REPLAY, _STILL)],
     {"severity": "warning", "replay_id": "r1", "cluster": "c", "topic": "t"}),
    ("KafkaArchiveReplayStalled", [_s(_REPLAY, _MOVING)], None),
]  # fmt: skip


def test_every_alert_has_a_firing_and_a_silent_scenario() -> None:
    alerts = {r["alert"] for r in _rules()["groups"][0]["rules"]}
    fired = {a for a, _s, exp in SCENARIOS if exp is not None}
    silent = {a for a, _s, exp in SCENARIOS if exp is None}
    assert fired == alerts == silent


def test_promtool_test_rules_each_alert_fires_exactly_when_it_should(tmp_path: Path) -> None:
    spec = _rules()
    # promtool compares annotations too: the logic is tested here, the annotation templates
    # by `promtool check rules` above
    for rule in spec["groups"][0]["rules"]:
        rule.pop("annotations", None)
    _write(tmp_path / "rules.yaml", spec)
    tests = [
        {
            "interval": "1m",
            "input_series": series,
            "alert_rule_test": [
                {
                    "eval_time": "8h",
                    "alertname": alert,
                    "exp_alerts": [] if exp is None else [{"exp_labels": exp}],
                }
            ],
        }
        for alert, series, exp in SCENARIOS
    ]
    path = _write(
        tmp_path / "tests.yaml",
        {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests},
    )
    proc = promtool("test", "rules", str(path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_promtool_test_rules_catches_a_wrong_expectation(tmp_path: Path) -> None:
    """The harness above can fail: an alert expected where the rule stays silent."""
    _write(tmp_path / "rules.yaml", _rules())
    test = {
        "interval": "1m",
        "input_series": [{"series": "kafka_archive_catalog_up", "values": "1x30"}],
        "alert_rule_test": [
            {"eval_time": "20m", "alertname": "KafkaArchiveMetricsDown",
             "exp_alerts": [{"exp_labels": {"severity": "critical"}}]}
        ],
    }  # fmt: skip
    path = _write(tmp_path / "t.yaml", {"rule_files": ["rules.yaml"], "tests": [test]})
    assert promtool("test", "rules", str(path), cwd=tmp_path).returncode != 0


def _dashboard() -> dict[str, Any]:
    r = render(ON)
    [cm] = [o for o in r.of_kind("ConfigMap") if o["metadata"]["name"].endswith("-dashboard")]
    data: dict[str, Any] = json.loads(cm["data"]["kafka-archive.json"])
    return data


def test_dashboard_is_the_chart_file_and_well_formed() -> None:
    d = _dashboard()
    assert d == json.loads((CHART_DIR / "dashboards" / "kafka-archive.json").read_text())
    assert d["uid"] == "kafka-archive" and d["title"]
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids))
    for p in d["panels"]:
        assert p["type"] in ("timeseries", "stat"), p["title"]
        g = p["gridPos"]
        assert g["x"] >= 0 and g["x"] + g["w"] <= 24 and g["h"] > 0, p["title"]
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert len(refs) == len(set(refs)), p["title"]
    variables = {v["name"] for v in d["templating"]["list"]}
    assert variables == {"datasource", "cluster"}


@pytest.mark.parametrize("area", ["lag", "archive", "catalog", "integrity", "follower", "replay"])
def test_dashboard_covers_each_area(area: str) -> None:
    exprs = " ".join(t["expr"] for p in _dashboard()["panels"] for t in p["targets"])
    assert f"kafka_archive_{area}" in exprs.replace("partition_lag", "lag")


def test_every_dashboard_query_names_only_metrics_the_code_exposes() -> None:
    known = names()
    for p in _dashboard()["panels"]:
        for t in p["targets"]:
            used = set(METRIC.findall(t["expr"]))
            assert used, (p["title"], t["expr"])
            assert used <= known, (p["title"], used - known)


def test_the_exporter_is_deployed_with_its_service_and_service_monitor_when_asked() -> None:
    assert not [
        o for o in render().of_kind("Deployment") if o["metadata"]["name"].endswith("-metrics")
    ]
    values = {
        "monitoring": {
            "exporter": {
                "enabled": True,
                "port": 9500,
                "clusters": ["prod=kafka-1:9092,kafka-2:9092"],
                "serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
            }
        }
    }
    r = render(values)
    [dep] = [o for o in r.of_kind("Deployment") if o["metadata"]["name"].endswith("-metrics")]
    validate_k8s(dep)
    [container] = dep["spec"]["template"]["spec"]["containers"]
    # kafka-archive itself, not the image's entrypoint (which would run it as "airflow ...")
    assert container["command"] == ["/usr/bin/tini", "--", "kafka-archive"]
    assert container["args"] == [
        "metrics", "serve", "--port", "9500",
        "--cluster", "prod=kafka-1:9092,kafka-2:9092",
    ]  # fmt: skip
    assert any(e["name"] == "KAFKA_ARCHIVE_DB" for e in container["env"])  # the catalog
    [svc] = [o for o in r.of_kind("Service") if o["metadata"]["name"].endswith("-metrics")]
    validate_k8s(svc)
    assert svc["spec"]["ports"][0]["port"] == 9500
    assert svc["spec"]["selector"] == dep["spec"]["selector"]["matchLabels"]
    [sm] = r.of_kind("ServiceMonitor")
    assert sm["metadata"]["labels"]["release"] == "prom"
    assert sm["spec"]["endpoints"][0]["port"] == "metrics"
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()


def test_the_exporter_can_be_scraped_and_reach_the_catalog_behind_the_default_deny() -> None:
    peer = {"namespaceSelector": {"matchLabels": {"name": "monitoring"}}}
    r = render({"monitoring": {"exporter": {"enabled": True, "scrapeFrom": [peer]}}})
    [np] = [o for o in r.of_kind("NetworkPolicy") if o["metadata"]["name"].endswith("-metrics")]
    validate_k8s(np)
    [ingress] = np["spec"]["ingress"]
    assert ingress["ports"] == [{"port": 9464, "protocol": "TCP"}] and ingress["from"] == [peer]
    ports = {p["port"] for rule in np["spec"]["egress"] for p in rule.get("ports", [])}
    assert {5432, 9092} <= ports  # the catalog database, the brokers
    [pg] = [o for o in r.of_kind("NetworkPolicy") if o["metadata"]["name"].endswith("-postgresql")]
    selectors = [peer["podSelector"] for rule in pg["spec"]["ingress"] for peer in rule["from"]]
    exporter_labels = np["spec"]["podSelector"]["matchLabels"]
    assert any(
        all(
            exporter_labels.get(e["key"]) in e.get("values", [])
            for e in s.get("matchExpressions", [])
        )
        and s.get("matchLabels", {}).items() <= exporter_labels.items()
        for s in selectors
    ), selectors


def test_the_exporter_command_in_the_chart_is_one_the_cli_accepts() -> None:
    """The chart's args parse as the real CLI's ``metrics serve`` options (--help exits 0)."""
    from kafka_archive.cli import app
    from typer.testing import CliRunner

    r = render({"monitoring": {"exporter": {"enabled": True, "clusters": ["p=k:9092"]}}})
    [dep] = [o for o in r.of_kind("Deployment") if o["metadata"]["name"].endswith("-metrics")]
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    result = CliRunner().invoke(app, [*args, "--help"])
    assert result.exit_code == 0, result.output
