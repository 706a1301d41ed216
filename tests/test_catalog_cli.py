"""``kafka-archive catalog ...``: every command's ``--json`` lines, readable output, time forms,
environment variables, and errors with hints."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.archive import run_archive
from kafka_archive.cli import _register_groups, app
from kafka_archive.store import open_store
from support.catalog_data import History, all_records, brute_force_offset, write_history
from typer.testing import CliRunner

pytest_plugins = ["support.spark", "support.s3server"]

C = "c1"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str]:
    root = tmp_path_factory.mktemp("cli")
    hist = write_history(root / "logs", seed=3, appends=60)
    store = open_store(str(root / "store"))
    run_archive(
        cluster=C, broker_id=1, log_dirs=[str(d) for d in hist.broker.log_dirs], store=store
    )
    return hist, store.uri


@pytest.fixture(scope="module")
def cli() -> CliRunner:
    _register_groups()
    return CliRunner()


def _run(cli: CliRunner, *args: str, env: dict[str, str] | None = None, code: int = 0) -> str:
    result = cli.invoke(app, ["catalog", *args], env=env)
    assert result.exit_code == code, result.output
    return result.output


def _lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def built(
    archive: tuple[History, str], cli: CliRunner, tmp_path_factory: pytest.TempPathFactory
) -> tuple[History, str, str]:
    hist, store = archive
    db = str(tmp_path_factory.mktemp("clidb") / "catalog.db")
    (report,) = _lines(
        _run(
            cli,
            "build",
            "--in-process",
            "--json",
            "--store",
            store,
            "--db",
            db,
            "--interval-bytes",
            "4096",
        )
    )
    assert report["kind"] == "build" and report["segments_added"] > 10 and report["failed"] == 0
    (again,) = _lines(_run(cli, "build", "--in-process", "--json", "--store", store, "--db", db))
    assert again["segments_added"] == 0 and again["already_cataloged"] == report["manifests"]
    return hist, store, db


def test_build_with_spark_and_environment(
    spark: Any, archive: tuple[History, str], cli: CliRunner, tmp_path: Path
) -> None:
    _hist, store = archive
    env = {"KAFKA_ARCHIVE_DB": str(tmp_path / "env.db"), "KAFKA_ARCHIVE_STORE": store}
    spark_build = ("build", "--engine", "spark", "--spark-master", "local[2]")
    (report,) = _lines(_run(cli, *spark_build, "--json", env=env))
    assert report["segments_added"] > 10 and report["engine"] == "spark"
    assert report["engine_reason"].endswith("engine spark asked for")
    text = _run(cli, *spark_build, env=env)
    assert "segments added" in text and "engine: spark" in text


def test_offsets_json_lines_and_time_forms(built: tuple[History, str, str], cli: CliRunner) -> None:
    hist, store, db = built
    recs = {p: list(all_records(hist.dirs[("orders", p)])) for p in range(3)}
    rng = random.Random(2)
    stamps = sorted(r.timestamp for rs in recs.values() for r in rs)
    for ts in [stamps[0] - 5, stamps[-1] + 5, *rng.sample(stamps, 6)]:
        iso = datetime.fromtimestamp(ts / 1000, tz=UTC).isoformat(timespec="milliseconds")
        naive = iso.replace("+00:00", "")
        for at in (str(ts), iso, naive):
            lines = _lines(
                _run(
                    cli,
                    "offsets",
                    "--cluster",
                    C,
                    "--topic",
                    "orders",
                    "--at",
                    at,
                    "--json",
                    "--db",
                    db,
                    "--store",
                    store,
                )
            )
            assert [set(x) for x in lines] == [ANSWER_KEYS] * 3
            for x in lines:
                assert (x["offset"], x["timestamp"]) == brute_force_offset(recs[x["partition"]], ts)
                assert x["exact"] and x["offset_max"] == x["offset"]
                assert x["clamped"] == _outside(recs[x["partition"]], ts)
                assert (x["note"] is None) == (x["clamped"] is None)
    # relative: an hour ago lies after the archive (2023): nothing that late
    lines = _lines(
        _run(
            cli,
            "offsets",
            "--cluster",
            C,
            "--topic",
            "orders",
            "--at",
            "now-1h",
            "-p",
            "1",
            "--json",
            "--db",
            db,
            "--store",
            store,
        )
    )
    (late,) = lines
    assert (late["partition"], late["offset"], late["timestamp"]) == (1, -1, -1)
    assert late["clamped"] == "after_end" and "after the archive's last record" in late["note"]
    text = _run(
        cli,
        "offsets",
        "--cluster",
        C,
        "--topic",
        "orders",
        "--at",
        str(stamps[0]),
        "--db",
        db,
        "--store",
        store,
    )
    assert "partition" in text and "orders" in text


ANSWER_KEYS = {
    "partition",
    "offset",
    "timestamp",
    "exact",
    "offset_max",
    "clamped",
    "note",
    "pruned",
    "topic_id",
}


def _outside(recs: list[Any], ts: int) -> str | None:
    """What ``clamped`` must say for ``ts``: before the partition's first record (the one at
    its first offset), after its latest timestamp, or inside."""
    if ts < recs[0].timestamp:
        return "before_start"
    if ts > max(r.timestamp for r in recs):
        return "after_end"
    return None


def test_offsets_before_and_after_the_archive_are_noted(
    built: tuple[History, str, str], cli: CliRunner
) -> None:
    """A moment before the archive's first record answers its first offset, one after its
    last answers -1: both say so (text note on stderr, ``clamped``/``note`` in JSON)."""
    hist, store, db = built
    recs = list(all_records(hist.dirs[("orders", 0)]))
    base = ["offsets", "--cluster", C, "--topic", "orders", "-p", "0", "--db", db]
    base += ["--store", store]
    early = recs[0].timestamp - 3_600_000
    (x,) = _lines(_run(cli, *base, "--at", str(early), "--json"))
    assert (x["offset"], x["clamped"]) == (recs[0].offset, "before_start")
    assert "before the archive's first record" in x["note"] and str(recs[0].offset) in x["note"]
    text = _run(cli, *base, "--at", str(early))
    assert "note:" in text and "before the archive's first record" in text
    late = max(r.timestamp for r in recs) + 1
    (y,) = _lines(_run(cli, *base, "--at", str(late), "--json"))
    assert (y["offset"], y["clamped"]) == (-1, "after_end")
    assert "after the archive's last record" in _run(cli, *base, "--at", str(late))
    # (CreateTime need not grow with offsets: "inside" is from the first record's time on)
    inside = next(r.timestamp for r in recs[len(recs) // 2 :] if r.timestamp > recs[0].timestamp)
    (z,) = _lines(_run(cli, *base, "--at", str(inside), "--json"))
    assert z["clamped"] is None and z["note"] is None
    assert "note:" not in _run(cli, *base, "--at", str(inside))


def test_offsets_without_store_answers_from_the_catalog(
    built: tuple[History, str, str], cli: CliRunner
) -> None:
    """No --store: the catalog alone bounds the answer (offset <= exact <= offset_max), says
    it is not exact, and the text tells how to get the exact one."""
    hist, _store, db = built
    recs = {p: list(all_records(hist.dirs[("orders", p)])) for p in range(3)}
    stamps = sorted(r.timestamp for rs in recs.values() for r in rs)
    for ts in stamps[:: max(1, len(stamps) // 7)]:
        args = ["offsets", "--cluster", C, "--topic", "orders", "--at", str(ts), "--db", db]
        lines = _lines(_run(cli, *args, "--json", env={"KAFKA_ARCHIVE_STORE": ""}))
        assert [set(x) for x in lines] == [ANSWER_KEYS] * 3
        for x in lines:
            want, _ = brute_force_offset(recs[x["partition"]], ts)
            if want == -1:
                assert x["offset"] == -1 and x["exact"]
            else:
                assert x["offset"] <= want <= x["offset_max"] and not x["exact"]
                assert x["timestamp"] == -1
    text = _run(cli, *args, env={"KAFKA_ARCHIVE_STORE": ""})
    assert "--store" in text and "error" not in text


def test_locate_stats_gaps_topics(
    built: tuple[History, str, str], cli: CliRunner, tmp_path: Path
) -> None:
    hist, store, db = built
    rec = list(all_records(hist.dirs[("events", 1)]))[42]
    (loc,) = _lines(
        _run(
            cli,
            "locate",
            "--cluster",
            C,
            "--topic",
            "events",
            "-p",
            "1",
            "--offset",
            str(rec.offset),
            "--json",
            "--db",
            db,
            "--store",
            store,
        )
    )
    assert loc["exact"] and loc["timestamp"] == rec.timestamp
    assert loc["byte_start"] < loc["byte_end"] and loc["object_key"].endswith(".log")
    first = min(r.timestamp for r in all_records(hist.dirs[("events", 0)]))
    png = tmp_path / "chart.png"
    args = [
        "stats",
        "--cluster",
        C,
        "--topic",
        "events",
        "--from",
        str(first - 60_000),
        "--to",
        str(first + 3_600_000),
        "--bucket",
        "10m",
        "--db",
        db,
    ]
    buckets = _lines(_run(cli, *args, "--json"))
    assert len(buckets) == 7 and all(b["width_ms"] == 600_000 for b in buckets)
    total = sum(1 for p in range(2) for r in all_records(hist.dirs[("events", p)]))
    assert sum(b["records"] for b in buckets) == total
    text = _run(cli, *args, "--png", str(png))
    assert "records" in text and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # buckets finer than a minute are counted from the archived batches (--store)
    fine_args = [*args[:-3], "10s", "--db", db, "--store", store, "--json"]
    fine = _lines(_run(cli, *fine_args))
    assert all(b["width_ms"] == 10_000 for b in fine) and len(fine) in (366, 367)
    assert sum(b["records"] for b in fine) == total
    assert _lines(_run(cli, "gaps", "--cluster", C, "--json", "--db", db)) == []
    assert "no gaps" in _run(cli, "gaps", "--cluster", C, "--db", db)
    held = _lines(_run(cli, "topics", "--cluster", C, "--json", "--db", db))
    assert {(h["topic"], h["partition"]) for h in held} == set(hist.dirs)
    assert "events" in _run(cli, "topics", "--cluster", C, "--db", db)


def test_group_offsets(built: tuple[History, str, str], cli: CliRunner) -> None:
    hist, _store, db = built
    history = {(t, p): v for (g, t, p), v in hist.commits.items() if g == "billing"}
    at = sorted(ts for v in history.values() for ts, _ in v)[len(history)]
    lines = _lines(
        _run(
            cli,
            "group-offsets",
            "--cluster",
            C,
            "--group",
            "billing",
            "--at",
            str(at),
            "--json",
            "--db",
            db,
        )
    )
    assert all(set(x) == {"topic", "partition", "offset", "commit_timestamp"} for x in lines)
    expected = {k: [o for ts, o in v if ts <= at] for k, v in history.items()}
    assert {(x["topic"], x["partition"]): x["offset"] for x in lines} == {
        k: v[-1] for k, v in expected.items() if v
    }
    assert "billing" in _run(cli, "group-offsets", "--cluster", C, "--group", "billing", "--db", db)


def test_errors_are_explained(built: tuple[History, str, str], cli: CliRunner) -> None:
    _hist, store, db = built
    out = _run(
        cli,
        "offsets",
        "--cluster",
        C,
        "--topic",
        "nope",
        "--at",
        "-1h",
        "--json",
        "--db",
        db,
        "--store",
        store,
        code=1,
    )
    (err,) = _lines(out)
    assert err["kind"] == "error" and "nope" in err["message"] and err["hint"]
    out = _run(
        cli,
        "offsets",
        "--cluster",
        C,
        "--topic",
        "orders",
        "--at",
        "yesterday-ish",
        "--json",
        "--db",
        db,
        "--store",
        store,
        code=1,
    )
    assert "ISO-8601" in _lines(out)[0]["message"]
    out = _run(
        cli,
        "stats",
        "--cluster",
        C,
        "--topic",
        "orders",
        "--from",
        "-1h",
        "--bucket",
        "1500ms",
        "--db",
        db,
        "--store",
        store,
        code=1,
    )
    assert "whole seconds" in out
    # a bucket finer than the catalog's minutes reads the archived batches: without a store
    # the error says where to give one
    out = _run(
        cli,
        "stats",
        "--cluster",
        C,
        "--topic",
        "orders",
        "--from",
        "-1h",
        "--bucket",
        "90s",
        "--db",
        db,
        env={"KAFKA_ARCHIVE_STORE": ""},
        code=2,
    )
    assert "--store" in out
    out = _run(cli, "topics", "--cluster", C, "--json", env={"KAFKA_ARCHIVE_DB": ""}, code=1)
    assert "KAFKA_ARCHIVE_DB" in _lines(out)[0]["hint"]


def test_help_has_examples(cli: CliRunner) -> None:
    out = _run(cli, "--help")
    assert "offsets" in out and "KAFKA_ARCHIVE_DB" in out
    for cmd in ("build", "offsets", "locate", "stats", "gaps", "group-offsets", "topics"):
        assert "Example" in _run(cli, cmd, "--help")


def test_demo_ends_with_commands_that_work(built: tuple[History, str, str], cli: CliRunner) -> None:
    """The demo's last lines are copy-pasteable: each names the cluster, catalog and (where
    bytes are read) store, and runs as printed (here against this catalog)."""
    import shlex

    from kafka_archive_dev.cli import explore_commands

    hist, store, db = built
    at = sorted(r.timestamp for r in all_records(hist.dirs[("orders", 0)]))[5]
    report = {
        "cluster": C,
        "db": db,
        "store": store,
        "root": str(Path(db).parent),
        "offsets_at": {"topic": "orders", "timestamp": at},
        "group_position": {"group": "billing"},
    }
    lines = explore_commands(report)
    # each command follows a line saying what it shows
    assert all(x.startswith(("kafka-archive ", "# ")) for x in lines) and lines[0].startswith("#")
    commands = [x for x in lines if x.startswith("kafka-archive catalog ")]
    assert any(" clusters " in c for c in commands) and any(" topics " in c for c in commands)
    # (the demo's own test, tests/e2e/test_demo.py, runs them all: replay, group move, export)
    for command in commands:
        argv = shlex.split(command)
        assert argv[0] == "kafka-archive" and "--db" in argv
        if "--cluster" in argv:
            assert argv[argv.index("--cluster") + 1] == C
        result = cli.invoke(app, argv[1:], env={"KAFKA_ARCHIVE_DB": "", "KAFKA_ARCHIVE_STORE": ""})
        assert result.exit_code == 0, (command, result.output)
