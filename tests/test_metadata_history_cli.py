"""``kafka-archive catalog topic-config / topic-history / acls``: --json answers, readable
tables, and clean errors (unknown topic at T says when it existed; no history says what to do)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.catalog.db import open_catalog
from kafka_archive.cli import _register_groups, app
from kafka_archive.services.metadata_history import MetadataHistoryService
from support.metadata_entries import ACL_1, TOPIC_A, TOPIC_B, scripted_history
from typer.testing import CliRunner

C = "prod"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("mh") / "catalog.db"
    with MetadataHistoryService(catalog=open_catalog(path, create=True)) as svc:
        svc.build(C, scripted_history())
    return str(path)


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _register_groups()
    return CliRunner()


def _run(cli: CliRunner, *args: str, code: int = 0) -> str:
    result = cli.invoke(app, ["catalog", *args], env={"COLUMNS": "200"})
    assert result.exit_code == code, result.output
    return result.output


def _lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def test_topic_config_json(cli: CliRunner, db: str) -> None:
    (a,) = _lines(
        _run(
            cli,
            "topic-config",
            "--cluster",
            C,
            "--topic",
            "orders",
            "--at",
            "8500",
            "--db",
            db,
            "--json",
        )
    )
    assert a["topic_id"] == TOPIC_A and a["partitions"] == 3
    assert a["leaders"] == {"0": 2, "1": 2, "2": 3} and a["configs"] == {"retention.ms": "1000"}
    resolved = {r["name"]: (r["value"], r["source"]) for r in a["resolved"]}
    assert resolved["retention.ms"] == ("1000", "topic")
    assert resolved["max.message.bytes"] == ("1048588", "kafka_default")
    (b,) = _lines(
        _run(
            cli,
            "topic-config",
            "--cluster",
            C,
            "--topic",
            "orders",
            "--at",
            "1970-01-01T00:00:14Z",
            "--db",
            db,
            "--json",
        )
    )
    assert b["topic_id"] == TOPIC_B and b["configs"] == {}


def test_topic_config_table(cli: CliRunner, db: str) -> None:
    out = _run(cli, "topic-config", "--cluster", C, "--topic", "orders", "--at", "8500", "--db", db)
    assert f"topic id {TOPIC_A}, 3 partition(s)" in out
    assert "retention.ms" in out and "kafka_default" in out


def test_unknown_topic_at_time_says_when_it_existed(cli: CliRunner, db: str) -> None:
    out = _run(
        cli,
        "topic-config",
        "--cluster",
        C,
        "--topic",
        "orders",
        "--at",
        "12500",
        "--db",
        db,
        code=1,
    )
    assert (
        "no topic 'orders'" in out and TOPIC_A in out and TOPIC_B in out and "Traceback" not in out
    )
    (err,) = _lines(
        _run(
            cli,
            "topic-config",
            "--cluster",
            C,
            "--topic",
            "orders",
            "--at",
            "12500",
            "--db",
            db,
            "--json",
            code=1,
        )
    )
    assert [i["topic_id"] for i in err["incarnations"]] == [TOPIC_A, TOPIC_B]
    out = _run(cli, "topic-config", "--cluster", C, "--topic", "nope", "--db", db, code=1)
    assert "never had a topic 'nope'" in out
    out = _run(cli, "acls", "--cluster", "other", "--db", db, code=1)
    assert "no metadata history of cluster 'other'" in out and "hint:" in out


def test_topic_history_json(cli: CliRunner, db: str) -> None:
    events = _lines(
        _run(cli, "topic-history", "--cluster", C, "--topic", "orders", "--db", db, "--json")
    )
    assert [e["what"] for e in events if e["what"] in ("created", "deleted")] == [
        "created",
        "deleted",
        "created",
    ]
    assert all(e["record_type"] and e["seq"] >= 0 for e in events)
    text = _run(cli, "topic-history", "--cluster", C, "--topic", "orders", "--db", db)
    assert "REMOVE_TOPIC_RECORD" in text and "partition 0: leader changed" in text


def test_acls_json_and_table(cli: CliRunner, db: str) -> None:
    (acl,) = _lines(_run(cli, "acls", "--cluster", C, "--at", "9000", "--db", db, "--json"))
    assert (
        acl["acl_id"] == ACL_1 and acl["principal"] == "User:alice" and acl["operation"] == "READ"
    )
    assert _lines(_run(cli, "acls", "--cluster", C, "--at", "15000", "--db", db, "--json")) == []
    assert "User:alice" in _run(cli, "acls", "--cluster", C, "--at", "9000", "--db", db)


def test_metadata_snapshot_of_a_dead_address_creates_nothing(
    cli: CliRunner, tmp_path: Path
) -> None:
    db = tmp_path / "new.db"
    out = _run(
        cli,
        "metadata-snapshot",
        "--cluster",
        "x",
        "--bootstrap",
        "127.0.0.1:1",
        "--timeout",
        "5",
        "--db",
        str(db),
        code=1,
    )
    assert "cannot reach" in out and "hint:" in out and "Traceback" not in out
    assert not db.exists()
