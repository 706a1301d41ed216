"""Issue 27: ``catalog build`` picks its engine by the size of the increment.

Under ``auto`` (the default) a build lists the segments not cataloged yet and extracts them in
this process unless they reach the Spark threshold (bytes or segments); ``--engine`` forces
one. A small increment must never start Spark: the tests make Spark's start fail (or pyspark
unimportable) and check the build still succeeds, saying which engine ran and why. That the
engines give the same catalog is tested where the real Spark runs
(tests/test_catalog_spark.py: the executors' build and the DAG's builds against the
in-process reference); ``--engine spark`` on a real local session is
tests/test_catalog_cli.py::test_build_with_spark_and_environment.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from kafka_archive.airflow.catalog_tasks import CatalogJobConfig, increment_of, load_catalog_config
from kafka_archive.catalog.build import (
    ExtractTask,
    Increment,
    InProcessRunner,
    TaskResult,
    choose_engine,
    list_increment,
)
from kafka_archive.catalog.db import open_catalog
from kafka_archive.cli import _register_groups, app
from kafka_archive.services.catalog_build import CatalogBuildService, SparkStartFailed
from kafka_archive.settings import Settings, SettingsError, load_settings
from support.catalog_data import archived_history, dump_catalog
from typer.testing import CliRunner

C = "c1"
MIB = 2**20


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int, int]:
    """(store URI, segments, bytes) of a small archive."""
    root = tmp_path_factory.mktemp("engine")
    _hist, store, _n = archived_history(root, cluster=C, seed=11, appends=40)
    with open_catalog(root / "probe.db", create=True) as cat:
        inc = list_increment(cat, store.uri)
    assert inc.segments > 5
    return store.uri, inc.segments, inc.bytes


class FakeSpark(InProcessRunner):
    """Stands for a started Spark runner (no JVM): extracts in-process, counts its calls."""

    engine = "spark"

    def __init__(self) -> None:
        super().__init__(1)
        self.tasks = 0
        self.spark = self  # the service stops the sessions it started

    def stop(self) -> None:
        pass

    def run(self, tasks: Sequence[ExtractTask]) -> Iterator[TaskResult]:
        self.tasks += len(tasks)
        return super().run(tasks)


def _no_spark(*_a: object, **_k: object) -> Any:
    raise AssertionError("Spark was started")


def test_choose_engine_follows_the_thresholds() -> None:
    def engine(requested: str, segments: int, nbytes: int) -> str:
        inc = Increment(segments, nbytes)
        return choose_engine(
            requested, inc, threshold_bytes=256 * MIB, threshold_segments=100
        ).engine

    assert engine("auto", 3, 4 * MIB) == "in-process"
    assert engine("auto", 99, 256 * MIB - 1) == "in-process"
    assert engine("auto", 3, 256 * MIB) == "spark"  # bytes reach the threshold
    assert engine("auto", 100, 1) == "spark"  # so does the number of segments
    assert engine("auto", 0, 0) == "in-process"
    assert engine("spark", 0, 0) == "spark"  # an explicit choice overrides
    assert engine("in-process", 10**6, 10**13) == "in-process"
    small = choose_engine("auto", Increment(3, 4_300_000), threshold_bytes=256 * MIB)
    assert small.reason.startswith("3 segment(s), 4.1 MiB new, below the Spark threshold (256.0")
    with pytest.raises(ValueError, match="engine must be one of"):
        choose_engine("fast", Increment(1, 1))


def test_a_small_increment_never_starts_spark(
    archive: tuple[str, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default engine with the default thresholds on a small archive: in-process, and
    Spark's session factory (which would fail) is never called."""
    store, segments, nbytes = archive
    monkeypatch.setattr("kafka_archive.spark.session.make_spark_session", _no_spark)
    monkeypatch.setattr(CatalogBuildService, "spark_runner", _no_spark)
    with CatalogBuildService(Settings(store=store, db=str(tmp_path / "c.db"))) as service:
        report = service.build()
    assert (report.engine, report.new_segments, report.new_bytes) == (
        "in-process",
        segments,
        nbytes,
    )
    assert report.segments_added == segments and "below the Spark threshold" in report.engine_reason
    with CatalogBuildService(Settings(store=store, db=str(tmp_path / "c.db"))) as service:
        again = service.build()
    assert (again.engine, again.engine_reason, again.segments_added) == (
        "in-process",
        "nothing new to extract",
        0,
    )


def test_an_increment_at_the_threshold_runs_on_spark(
    archive: tuple[str, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thresholds from the settings: reached by bytes, then by segments, the build extracts
    on the Spark runner (a stand-in here; the real one: test_catalog_spark.py), which gives
    the catalog the in-process build gives."""
    store, segments, nbytes = archive
    started: list[FakeSpark] = []

    def fake(_self: object, *_a: object, **_k: object) -> FakeSpark:
        started.append(FakeSpark())
        return started[-1]

    monkeypatch.setattr(CatalogBuildService, "spark_runner", fake)
    dumps = []
    for n, threshold in enumerate(
        [
            {"catalog_spark_threshold_bytes": nbytes},
            {"catalog_spark_threshold_segments": segments},
            {"catalog_spark_threshold_bytes": nbytes + 1, "catalog_engine": "in-process"},
        ]
    ):
        settings = load_settings({"store": store, "db": str(tmp_path / f"{n}.db"), **threshold})
        with CatalogBuildService(settings) as service:
            report = service.build()
            dumps.append(dump_catalog(service.resources.catalog()))
        assert report.segments_added == segments and report.failed == []
        if n < 2:
            assert (
                report.engine == "spark"
                and "at or above the Spark threshold" in report.engine_reason
            )
            assert started[-1].tasks == segments
        else:
            assert (
                report.engine == "in-process"
                and "engine in-process asked for" in report.engine_reason
            )
    assert len(started) == 2 and dumps[0] == dumps[1] == dumps[2]


def test_a_spark_that_does_not_start_is_a_typed_error_and_a_failed_run(
    archive: tuple[str, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, _segments, _nbytes = archive

    def broken(*_a: object, **_k: object) -> Any:
        raise RuntimeError("Java gateway process exited\nmore lines")

    monkeypatch.setattr("kafka_archive.spark.session.make_spark_session", broken)
    with CatalogBuildService(Settings(store=store, db=str(tmp_path / "c.db"))) as service:
        with pytest.raises(SparkStartFailed, match=r"local\[\*\].*Java gateway process exited$"):
            service.build(engine="spark")
        with service.resources.catalog().session() as s:
            from kafka_archive.catalog.models import BuildRun

            assert [r.status for r in s.query(BuildRun)] == ["failed"]


def _cli(*args: str, code: int = 0) -> list[dict[str, Any]]:
    _register_groups()
    result = CliRunner().invoke(app, ["catalog", "build", *args])
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    return [json.loads(x) for x in result.output.splitlines() if x.startswith("{")]


def test_cli_reports_the_engine_and_keeps_in_process_as_an_alias(
    archive: tuple[str, int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, segments, _nbytes = archive
    monkeypatch.setattr(CatalogBuildService, "spark_runner", _no_spark)
    db = str(tmp_path / "c.db")
    (report,) = _cli("--json", "--store", store, "--db", db)
    assert report["engine"] == "in-process" and report["new_segments"] == segments
    assert "below the Spark threshold (4.0 GiB or 1000 segments)" in report["engine_reason"]
    (again,) = _cli("--in-process", "--json", "--store", store, "--db", db)
    assert again["engine_reason"] == "0 segment(s), 0 B new, engine in-process asked for"
    (err,) = _cli(
        "--in-process", "--engine", "spark", "--json", "--store", store, "--db", db, code=2
    )
    assert "contradicts" in err["message"]
    (err,) = _cli("--engine", "fast", "--json", "--store", store, "--db", db, code=2)
    assert "catalog_engine" in err["message"] and "auto, in-process, spark" in err["message"]
    _register_groups()
    text = CliRunner().invoke(
        app, ["catalog", "build", "--store", store, "--db", str(tmp_path / "text.db")]
    )
    assert text.exit_code == 0, text.output
    assert f"engine: in-process ({segments} segment(s)" in text.output
    assert "starting Spark" not in text.output


def test_auto_build_works_without_pyspark(archive: tuple[str, int, int], tmp_path: Path) -> None:
    """pyspark unimportable (``sys.modules['pyspark'] = None``): a small increment under
    ``auto`` builds all the same, and the Spark runner's module is never imported (only the
    master URL's syntax check is)."""
    store, segments, _nbytes = archive
    code = (
        "import sys\n"
        "sys.modules['pyspark'] = None\n"
        "sys.argv = ['kafka-archive', 'catalog', 'build', '--json', '--store', sys.argv[1], "
        "'--db', sys.argv[2]]\n"
        "from kafka_archive.cli import main\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    assert 'kafka_archive.spark.session' not in sys.modules\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, store, str(tmp_path / "c.db")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (report,) = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    assert report["engine"] == "in-process" and report["segments_added"] == segments


def test_threshold_settings_are_sizes_and_counts() -> None:
    s = load_settings(
        env={
            "KAFKA_ARCHIVE_CATALOG_SPARK_THRESHOLD_BYTES": "512MiB",
            "KAFKA_ARCHIVE_CATALOG_SPARK_THRESHOLD_SEGMENTS": "100",
        }
    )
    assert (s.catalog_spark_threshold_bytes, s.catalog_spark_threshold_segments) == (512 * MIB, 100)
    assert load_settings(env={}).catalog_engine == "auto"
    for name, bad in (("BYTES", "1.5GiB"), ("BYTES", "0"), ("SEGMENTS", "-1"), ("SEGMENTS", "1e3")):
        with pytest.raises(SettingsError, match=f"catalog_spark_threshold_{name.lower()}"):
            load_settings(env={f"KAFKA_ARCHIVE_CATALOG_SPARK_THRESHOLD_{name}": bad})


def test_the_dag_config_carries_the_engine_and_measures_the_increment(
    archive: tuple[str, int, int], tmp_path: Path
) -> None:
    """The catalog DAG's configuration resolves the engine settings (Variable JSON keys, the
    environment over them); :func:`increment_of` is what the submit task decides by."""
    store, segments, nbytes = archive
    cfg = load_catalog_config(
        '{"catalog_engine": "spark", "catalog_spark_threshold_bytes": "1GiB"}',
        {"KAFKA_ARCHIVE_STORE": store, "KAFKA_ARCHIVE_DB": str(tmp_path / "c.db")},
    )
    assert (cfg.engine, cfg.spark_threshold_bytes) == ("spark", 2**30)
    auto = CatalogJobConfig(store_uri=store, db_url=str(tmp_path / "c.db"))
    choice = increment_of(auto)
    assert choice.engine == "in-process" and choice.increment == Increment(segments, nbytes)
    low = auto.model_copy(update={"spark_threshold_segments": segments})
    assert increment_of(low).engine == "spark"
    with open_catalog(tmp_path / "c.db") as cat:  # measuring wrote nothing
        assert dump_catalog(cat)["segments"] == []
