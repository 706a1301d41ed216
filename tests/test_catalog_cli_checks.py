"""``kafka-archive catalog build`` / ``verify`` / query commands on bad input (issue 10):
a clear error, a non-zero exit, no traceback, and nothing created."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.archive import run_archive
from kafka_archive.archive.layout import manifest_key
from kafka_archive.cli import _register_groups, app
from kafka_archive.store import open_store
from support.catalog_data import write_history
from typer.testing import CliRunner

C = "c1"


@pytest.fixture(scope="module")
def archive_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clichecks")
    hist = write_history(root / "logs", seed=5, appends=30)
    store = open_store(str(root / "store"))
    run_archive(
        cluster=C, broker_id=1, log_dirs=[str(d) for d in hist.broker.log_dirs], store=store
    )
    return root / "store"


@pytest.fixture
def store_dir(archive_dir: Path, tmp_path: Path) -> Path:
    shutil.copytree(archive_dir, tmp_path / "store")
    return tmp_path / "store"


def _run(*args: str, code: int) -> str:
    _register_groups()
    result = CliRunner().invoke(app, ["catalog", *args])
    assert result.exit_code == code, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result.output


def _lines(output: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith("{")]


def _build(store: Path, db: Path, *extra: str, code: int = 0) -> str:
    return _run(
        "build", "--in-process", "--json", "--store", str(store), "--db", str(db), *extra, code=code
    )


def test_build_from_a_store_that_does_not_exist(tmp_path: Path) -> None:
    out = _build(tmp_path / "no-such-store", tmp_path / "c.db", code=1)
    (err,) = _lines(out)
    assert "does not exist" in err["message"] and "no-such-store" in err["message"]
    assert not (tmp_path / "c.db").exists() and not (tmp_path / "no-such-store").exists()


def test_build_from_an_empty_store(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (err,) = _lines(_build(tmp_path / "empty", tmp_path / "c.db", code=1))
    assert "holds nothing" in err["message"] and err["hint"]
    assert not (tmp_path / "c.db").exists()


def test_build_of_a_cluster_the_store_does_not_hold(store_dir: Path, tmp_path: Path) -> None:
    (err,) = _lines(_build(store_dir, tmp_path / "c.db", "--cluster", "other", code=1))
    assert "nothing of cluster 'other'" in err["message"]


def test_bogus_spark_master(store_dir: Path, tmp_path: Path) -> None:
    out = _run(
        "build", "--json", "--spark-master", "bogus://x", "--store", str(store_dir),
        "--db", str(tmp_path / "c.db"), code=1,
    )  # fmt: skip
    (err,) = _lines(out)
    assert "not a Spark master URL" in err["message"] and "local[*]" in err["hint"]
    assert not (tmp_path / "c.db").exists()


def test_build_with_a_bad_manifest_catalogs_the_rest_and_names_it(
    store_dir: Path, tmp_path: Path
) -> None:
    bad = manifest_key(C, "orders", 0, 123_456, "cd" * 32)
    (store_dir / bad).write_bytes(b"not json at all")
    out = _build(store_dir, tmp_path / "c.db", code=1)
    report, err = _lines(out)
    assert report["kind"] == "build" and report["segments_added"] == report["manifests"] - 1
    assert report["problems"] == 1 and report["problem_list"][0]["kind"] == "unreadable-manifest"
    assert err["kind"] == "error" and bad in err["message"]
    gaps = _lines(_run("gaps", "--cluster", C, "--json", "--db", str(tmp_path / "c.db"), code=0))
    (gap,) = [g for g in gaps if g["kind"] == "unreadable-manifest"]
    assert (gap["partition"], gap["manifest"], gap["start_offset"]) == (0, bad, 123_456)
    topics = _lines(
        _run("topics", "--cluster", C, "--json", "--db", str(tmp_path / "c.db"), code=0)
    )
    assert [t["problems"] for t in topics if (t["topic"], t["partition"]) == ("orders", 0)] == [1]


def test_verify_command(store_dir: Path, tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    _build(store_dir, db)
    args = ("verify", "--cluster", C, "--json", "--db", str(db), "--store", str(store_dir))
    (ok,) = _lines(_run(*args, "--deep", code=0))
    assert ok["kind"] == "verify" and ok["checked"] > 5 and ok["problems"] == 0
    victim = next(p for p in sorted(store_dir.rglob("*.log")) if "/orders/" in str(p))
    victim.unlink()
    report, err = _lines(_run(*args, code=1))
    assert report["problems"] == 1 and err["kind"] == "error"
    (p,) = report["problem_list"]
    assert p["kind"] == "missing-object" and str(victim).endswith(p["object_key"])
    # a store that is not the archive is refused before anything is recorded
    (tmp_path / "elsewhere").mkdir()
    _run("verify", "--cluster", C, "--db", str(db), "--store", str(tmp_path / "elsewhere"), code=1)


@pytest.mark.parametrize(
    "args",
    [
        ("locate", "-p", "0", "--offset", "-5"),
        ("locate", "-p", "0", "--offset", str(1 << 63)),
        ("locate", "-p", str(1 << 40), "--offset", "5"),
        ("offsets", "--at", str(1 << 70)),
        ("offsets", "--at", "5", "-p", "-1"),
        ("stats", "--from", str(-(1 << 64))),
        ("stats", "--from", "-1h", "--bucket", f"{1 << 62}w"),
    ],
)
def test_numbers_out_of_range_are_errors(
    store_dir: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    db = tmp_path / "c.db"
    _build(store_dir, db)
    cmd, *rest = args
    extra = ("--store", str(store_dir)) if cmd in ("locate", "offsets") else ()
    _register_groups()
    result = CliRunner().invoke(
        app, ["catalog", cmd, "--cluster", C, "--topic", "orders", *rest, "--db", str(db), *extra]
    )
    assert result.exit_code in (1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output


def test_build_names_a_corrupt_object_once(store_dir: Path, tmp_path: Path) -> None:
    victim = next(p for p in sorted(store_dir.rglob("*.log")) if "/orders/" in str(p))
    data = bytearray(victim.read_bytes())
    data[7] ^= 1
    victim.write_bytes(bytes(data))
    report, err = _lines(_build(store_dir, tmp_path / "c.db", code=1))
    assert report["failed"] == 1 and report["problems"] == 1
    assert err["message"].startswith("1 manifest(s) could not be cataloged")
    (named,) = err["failures"]
    assert named.endswith("(corrupt)")
