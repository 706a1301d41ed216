"""The ``kafka_archive_fetch`` DAG's task body (:mod:`kafka_archive.airflow.fetch_tasks`)
without Airflow: its configuration (Variable, else settings), secrets refused in the Variable
and taken from a connection or the environment, and one catch-up run per cluster against a
fake service. The real broker: tests/real_kafka/test_fetch_task_real.py."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any, cast

import pytest
from kafka_archive.airflow.fetch_tasks import (
    FetchedCluster,
    FetchJobConfig,
    FetchTaskError,
    cluster_client,
    load_fetch_config,
    run_fetch,
)
from kafka_archive.archive.fetch.report import FetchReport, Hole, PartitionReport
from kafka_archive.services.archive import ArchiveService
from kafka_archive.settings import SettingsError

SECRET = "s3cr3t-never-shown"


def _variable(**over: Any) -> str:
    data = {
        "store": "file:///srv/archive",
        "clusters": [
            {
                "cluster": "prod",
                "bootstrap": "kafka-1:9093",
                "topics": ["orders.*"],
                "client_config": {"security.protocol": "SASL_SSL"},
            }
        ],
        "max_seconds": 60,
    }
    return json.dumps(data | over)


# -- configuration ---------------------------------------------------------------------------


def test_the_variable_gives_store_clusters_and_max_seconds() -> None:
    config = load_fetch_config(_variable(), env={})
    assert config.store == "file:///srv/archive"
    assert config.max_seconds == 60
    (c,) = config.clusters
    assert (c.cluster, c.bootstrap, c.topics) == ("prod", "kafka-1:9093", ["orders.*"])
    assert c.client_config == {"security.protocol": "SASL_SSL"}


def test_the_environment_gives_one_cluster_and_wins_for_the_store() -> None:
    env = {
        "KAFKA_ARCHIVE_STORE": "file:///env/store",
        "KAFKA_ARCHIVE_FETCH_CLUSTER": "legacy",
        "KAFKA_ARCHIVE_FETCH_BOOTSTRAP": "k:9092",
        "KAFKA_ARCHIVE_FETCH_TOPICS": "a, b-*",  # comma-separated globs
    }
    config = load_fetch_config(None, env=env)
    assert config.store == "file:///env/store"
    assert [(c.cluster, c.bootstrap, c.topics) for c in config.clusters] == [
        ("legacy", "k:9092", ["a", "b-*"])
    ]
    assert config.max_seconds == 240  # the default fits the 5-minute schedule
    # the environment wins over the Variable's store (the platform's one precedence)
    assert load_fetch_config(_variable(), env=env).store == "file:///env/store"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (None, "no archive store"),
        (json.dumps({"store": "file:///x"}), "no cluster to archive"),
        ("{not json", "is not JSON"),
        (_variable(max_seconds=0), "max_seconds"),
        (_variable(clusters=[{"cluster": "c", "bootstrap": "k:1", "topic": "x"}]), "topic"),
    ],
)
def test_a_bad_configuration_is_one_settings_error(raw: str | None, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        load_fetch_config(raw, env={})


def test_a_secret_in_the_variable_is_refused_by_name_never_by_value() -> None:
    clusters = [
        {"cluster": "a", "bootstrap": "k:1"},
        {
            "cluster": "b",
            "bootstrap": "k:2",
            "client_config": {"sasl.password": SECRET, "security.protocol": "SASL_SSL"},
        },
    ]
    with pytest.raises(SettingsError) as err:
        load_fetch_config(_variable(clusters=clusters), env={})
    text = str(err.value) + str(err.value.hint)
    assert "clusters[1].client_config.sasl.password" in text
    assert "connection" in text and "secret_env" in text
    assert SECRET not in text


def test_secrets_come_from_the_connection_and_the_environment() -> None:
    conn = SimpleNamespace(
        host="b1:9093,b2",
        port=9094,
        login="archiver",
        password=SECRET,
        extra_dejson={"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"},
    )
    asked: list[str] = []

    def getter(conn_id: str) -> Any:
        asked.append(conn_id)
        return conn

    c = FetchedCluster(
        cluster="prod",
        client_config={"sasl.mechanism": "SCRAM-SHA-512"},
        connection="kafka_prod",
        secret_env={"ssl.key.password": "PROD_KEY_PASSWORD"},
    )
    bootstrap, client = cluster_client(
        c, connection_getter=getter, env={"PROD_KEY_PASSWORD": "keypw"}
    )
    assert asked == ["kafka_prod"]
    assert bootstrap == "b1:9093,b2:9094"  # the connection's host when bootstrap is unset
    assert client == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",  # the Variable's setting wins over the extra
        "sasl.username": "archiver",
        "sasl.password": SECRET,
        "ssl.key.password": "keypw",
    }


def test_an_unset_secret_variable_or_a_missing_connection_is_named() -> None:
    c = FetchedCluster(cluster="prod", bootstrap="k:1", secret_env={"sasl.password": "PW"})
    with pytest.raises(
        SettingsError, match=r"sasl\.password comes from the environment variable PW"
    ):
        cluster_client(c, env={})

    def missing(conn_id: str) -> Any:
        raise LookupError(f"The conn_id `{conn_id}` isn't defined")

    with pytest.raises(SettingsError, match="cannot read Airflow connection 'nope'"):
        cluster_client(
            FetchedCluster(cluster="prod", connection="nope"), connection_getter=missing, env={}
        )
    with pytest.raises(SettingsError, match="no bootstrap servers"):
        cluster_client(FetchedCluster(cluster="prod"), env={})


# -- the run ---------------------------------------------------------------------------------


class FakeStore:
    uri = "file:///fake"
    closed = False

    def close(self) -> None:
        self.closed = True


class FakeService:
    """``open_store`` and ``archive_fetch`` as the task uses them; ``outcomes`` by cluster: a
    stopped_by, an exception, or a partition error."""

    def __init__(self, outcomes: dict[str, Any]) -> None:
        self.outcomes = outcomes
        self.calls: list[dict[str, Any]] = []
        self.store = FakeStore()

    def open_store(self) -> FakeStore:
        return self.store

    def archive_fetch(self, **kw: Any) -> FetchReport:
        self.calls.append(kw)
        outcome = self.outcomes.get(kw["cluster"], "caught_up")
        if isinstance(outcome, Exception):
            raise outcome
        report = FetchReport(kw["cluster"], "file:///fake", "t0", "t1", stopped_by="caught_up")
        part = PartitionReport("orders", 0, 0, 10, 10, segments=2, bytes_uploaded=500)
        part.manifests = ["m1", "m2"]
        if outcome == "partition_error":
            part.error = "Fetch answered TOPIC_AUTHORIZATION_FAILED"
        else:
            report.stopped_by = outcome
        report.partitions = [part]
        report.holes = [Hole("orders", 0, 0, 3)]
        return report


def _config(*names: str, **client: str) -> FetchJobConfig:
    return FetchJobConfig(
        store="file:///fake",
        clusters=[
            FetchedCluster(
                cluster=n, bootstrap=f"{n}:9092", topics=["orders"], client_config=client
            )
            for n in names
        ],
        max_seconds=30,
    )


def test_each_cluster_is_archived_until_caught_up_with_a_small_report() -> None:
    service = FakeService({})
    lines: list[str] = []
    reports = run_fetch(
        _config("a", "b", **{"security.protocol": "SSL", "segment.ms": "60000"}),
        lines.append,
        service=cast(ArchiveService, service),
    )
    assert [c["cluster"] for c in service.calls] == ["a", "b"]
    call = service.calls[0]
    assert call["bootstrap"] == "a:9092" and call["store"] is service.store
    assert call["config"] == {"security.protocol": "SSL"}
    opts = call["options"]
    assert (opts.topics, opts.until_caught_up, opts.duration_s) == (("orders",), True, 30)
    assert dict(opts.segment_overrides) == {"segment.ms": 60000}
    assert reports[0] == {
        "cluster": "a",
        "ok": True,
        "stopped_by": "caught_up",
        "partitions": 1,
        "segments": 2,
        "bytes_uploaded": 500,
        "holes": [{"topic": "orders", "partition": 0, "start": 0, "end": 3}],
        "errors": [],
    }
    json.dumps(reports)  # XCom-able
    assert any("hole orders-0 offsets 0..2" in line for line in lines)
    assert service.store.closed


def test_a_failing_cluster_fails_the_task_after_the_others_had_their_turn() -> None:
    service = FakeService(
        {
            "a": RuntimeError(f"SASL authentication failed sasl.password={SECRET}"),
            "b": "duration",
            "c": "partition_error",
        }
    )
    with pytest.raises(FetchTaskError) as err:
        run_fetch(_config("a", "b", "c", "d"), service=cast(ArchiveService, service))
    assert [c["cluster"] for c in service.calls] == ["a", "b", "c", "d"]
    text = str(err.value)
    assert "a: SASL authentication failed" in text and SECRET not in text
    assert "b: not caught up within 30s" in text
    assert "c: orders-0: Fetch answered TOPIC_AUTHORIZATION_FAILED" in text
    assert "d:" not in text
    assert service.store.closed


def test_a_bad_segment_override_fails_only_its_cluster() -> None:
    service = FakeService({})
    with pytest.raises(FetchTaskError, match=r"a: segment\.bytes must be a positive integer"):
        run_fetch(_config("a", **{"segment.bytes": "lots"}), service=cast(ArchiveService, service))
    assert service.calls == []


def test_workers_share_each_cluster_through_its_group() -> None:
    one = _config("a")
    assert one.workers == 1 and one.group_of(one.clusters[0]) is None
    raw = json.dumps(
        {
            "store": "file:///s",
            "workers": 3,
            "clusters": [
                {"cluster": "a", "bootstrap": "a:9092"},
                {"cluster": "b", "bootstrap": "b:9092", "group": "archivers-b"},
            ],
        }
    )
    config = load_fetch_config(raw, env={})
    service = FakeService({})
    run_fetch(config, service=cast(ArchiveService, service))
    groups = [call["options"].group for call in service.calls]
    assert groups == ["kafka-archive-fetch-a", "archivers-b"]
    with pytest.raises(SettingsError, match="workers"):
        load_fetch_config(raw.replace('"workers": 3', '"workers": 0'), env={})
